"""Shared fixtures: a scripted adapter that exercises the protocol engine without any model."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_eval_unify.adapter import UNDERSTAND_AND_GENERATE, UnifiedModel
from lmms_eval_unify.run import provenance
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV


class ScriptedAdapter(UnifiedModel):
    """Answers from a script and records every primitive call (prompt, number of images, phase)."""

    model_id = "scripted"
    capabilities = UNDERSTAND_AND_GENERATE

    def __init__(self, texts, **kwargs):
        super().__init__(**kwargs)
        self.texts = list(texts)
        self.calls = []

    def understand(self, images, prompt, **decoding):
        phase = decoding.pop("phase")
        self.calls.append(("understand", prompt, len(images), phase.name, phase.step, decoding))
        return self.texts.pop(0)

    def generate_image(self, prompt, images, **decoding):
        phase = decoding.pop("phase")
        self.calls.append(("generate_image", prompt, len(images), phase.name, phase.step, decoding))
        return Image.new("RGB", (16, 16), (len(self.calls) * 10 % 255, 0, 0))


@pytest.fixture(autouse=True)
def _test_media_is_trusted(tmp_path_factory, monkeypatch):
    """Unit tests write model media anywhere under pytest's temporary folder: trust it as a media root
    (scorers refuse images outside the run's media roots). CLI runs drop this (``cli_runs.offline_env``)
    so they exercise the real trust chain; hostile-path tests use folders outside it."""
    monkeypatch.setenv(EXTRA_MEDIA_ROOTS_ENV, str(tmp_path_factory.getbasetemp()))


@pytest.fixture(autouse=True)
def _no_data_sources_from_earlier_tests(monkeypatch):
    """The data sources tasks loaded are recorded per process (``provenance._data_sources``, one run per process
    outside tests): each test starts with none, so a task another test loaded on generated data marks nothing."""
    monkeypatch.setattr(provenance, "_data_sources", {})


def make_request(
    prompt: str, gen_kwargs: dict, task: str = "toy", doc_id: int = 0, n_images: int = 1, colour: str = "blue"
) -> Instance:
    def doc_to_visual(doc):
        return [Image.new("RGB", (8, 8), colour) for _ in range(n_images)]

    return Instance(
        request_type="generate_until",
        arguments=(prompt, gen_kwargs, doc_to_visual, doc_id, task, "test"),
        idx=0,
        metadata={"task": task, "doc_id": doc_id, "repeats": 1},
    )


@pytest.fixture
def scripted(tmp_path):
    def build(texts, **kwargs):
        model = ScriptedAdapter(texts, output_dir=str(tmp_path), **kwargs)
        model.task_dict = {"toy": {"test": {i: {} for i in range(10)}}}
        return model

    return build


# --- test tiers ----------------------------------------------------------------------------------------
# `pytest -m fast` runs every test that carries none of COST_MARKERS (README: the fast tier); the full suite
# runs everything. pyproject.toml describes each marker.

COST_MARKERS = ("slow", "subprocess", "models", "heavy")
"""What keeps a test out of the fast tier."""

MODEL_FIXTURES = frozenset({"tiny_janus", "tiny_emu3", "tiny_qwen_vl", "tiny_qwen_edit"})
"""The tiny real models of tests/model_adapters/conftest.py: a test using one is marked ``models``."""

PYTHON_BIN = Path(sys.executable).parent
"""A child process started from here (the interpreter, lmms-eval, lmms-eval-unify, torchrun) is a Python start."""

FAST_TEST_BUDGET_S = 3.0
"""A fast test taking longer (setup, call and teardown) is listed at the end of the run as one to mark."""

COST_WEIGHTS = {"slow": 10.0, "models": 10.0, "subprocess": 3.0, "heavy": 1.0}
"""Rough seconds-per-test scale of each cost marker: under ``pytest -n`` the costliest files are sent first."""


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker (``pytest -n N``) computes with its share of the cores, and so do the processes it
    starts (``OMP_NUM_THREADS``, unless set): N workers each using every core would oversubscribe each torch op."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they use, then mark ``fast`` every test without a cost marker (before ``-m``
    selects). On an xdist worker, order the files by cost (their tests keep their order): the schedule below
    sends files in this order, so the long ones start first and short ones fill the end."""
    for item in items:
        if MODEL_FIXTURES.intersection(item.fixturenames):
            item.add_marker("models")
        if not any(item.get_closest_marker(name) for name in COST_MARKERS):
            item.add_marker("fast")
    if hasattr(config, "workerinput"):
        cost: dict[str, float] = {}
        for item in items:
            weight = max((w for name, w in COST_WEIGHTS.items() if item.get_closest_marker(name)), default=0.0)
            cost[str(item.path)] = cost.get(str(item.path), 0.0) + weight
        items.sort(key=lambda item: -cost[str(item.path)])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``pytest -n N`` (default ``--dist load``) hands out whole files, in the workers' collection order: a
    file's module fixtures (CLI runs, generated data) are then built once, not once per worker."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False
    return LoadFileScheduling(config, log)


_fast_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "fast" in report.keywords:
        _fast_seconds[report.nodeid] = _fast_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List the fast tests over :data:`FAST_TEST_BUDGET_S`: the fast tier stays fast only if they get marked."""
    over = sorted(((s, n) for n, s in _fast_seconds.items() if s > FAST_TEST_BUDGET_S), reverse=True)
    if over:
        terminalreporter.section(f"fast tests over {FAST_TEST_BUDGET_S:.0f} s")
        for seconds, nodeid in over:
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")
        terminalreporter.write_line("mark each by its cost (pyproject.toml: heavy, models, subprocess) or speed it up")


_python_children: list[str] = []


def _note_python_children(event: str, args: tuple) -> None:
    if event == "subprocess.Popen":
        executable, argv = str(args[0]), args[1]
        if Path(shutil.which(executable) or executable).parent == PYTHON_BIN:
            _python_children.append(argv if isinstance(argv, str) else " ".join(str(a) for a in argv[:4]))


sys.addaudithook(_note_python_children)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """Forget the Python processes started before this test (its fixtures' setup counts as the test's)."""
    _python_children.clear()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A test that starts a Python process (seconds of interpreter start and imports) must say so: it fails
    unless marked ``subprocess`` or ``slow``, which keeps it out of the fast tier."""
    report = yield
    if call.when == "call" and report.passed and _python_children:
        if not (item.get_closest_marker("subprocess") or item.get_closest_marker("slow")):
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} started a Python process ({_python_children[0]} ...) but is not marked "
                "`subprocess` or `slow`: add @pytest.mark.subprocess so the fast tier (`pytest -m fast`) leaves it out"
            )
    return report
