"""The official-code worker: a backend class run by another interpreter, driven through JSON lines and PNG files.

A stand-in checkout (a backend module, and a ``datasets/`` package of its own as Show-o2 has) plays the official
code; the worker runs it with this interpreter (the machinery) or with a model environment created from scratch
(``lmms-eval-unify env create``'s code, on a pin that conflicts with this environment's).
"""

import importlib.metadata
import json
import sys
import textwrap
from pathlib import Path

import huggingface_hub
import pytest
from PIL import Image, UnidentifiedImageError

from lmms_eval_unify import gate
from lmms_eval_unify.generation import worker_main
from lmms_eval_unify.generation.environments import create_environment
from lmms_eval_unify.generation.worker import (
    InProcessBackend,
    WorkerBackend,
    WorkerError,
    missing_environment,
    missing_in_environment,
    probe_timeout,
    stale_environment_warning,
    start_backend,
)

pytestmark = pytest.mark.subprocess

BACKEND_SOURCE = """
import os
import importlib.metadata

import torch
from PIL import Image


def probe(configuration):
    if configuration.get("checkpoint") == "absent":
        return [{"kind": "weights", "what": "the config loads 'absent' by name", "fix": "download it"}]
    return []


class StandInBackend:
    def __init__(self, colour):
        self.colour = colour
        print("official code prints this on stdout")

    def draw(self, size):
        shade = int(torch.randint(0, 256, ()).item())
        return [Image.new("RGB", (size, size), (shade, self.colour, 0)), Image.new("L", (2, 3), shade)]

    def echo(self, images, label=None):
        return {"label": label, "images": images, "sizes": [list(image.size) for image in images]}

    def fail(self):
        raise ValueError("the official code failed on this input")

    def crash(self):
        os._exit(3)

    def where_is_datasets(self):
        import datasets.utils

        return datasets.utils.__file__

    def hub_version(self):
        return importlib.metadata.version("huggingface-hub")

    def hostile(self, kind, target=""):
        # what broken or hostile official code could hand back
        import sys
        from pathlib import Path

        exchange = Path(sys.argv[sys.argv.index("--exchange") + 1])
        if kind == "symlink":
            (exchange / "evil.png").symlink_to(target)
            return {"__image__": "evil.png"}
        if kind == "escape":
            return {"__image__": "../../" + target}
        if kind == "not_an_image":
            (exchange / "junk.png").write_bytes(b"not a PNG at all")
            return {"__image__": "junk.png"}
        if kind == "huge":
            return "x" * 5000
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A stand-in of an official checkout: its backend module and a ``datasets/utils.py`` of its own."""
    root = tmp_path / "official"
    (root / "datasets").mkdir(parents=True)
    (root / "datasets" / "__init__.py").write_text("")
    (root / "datasets" / "utils.py").write_text("def image_transform(image, resolution):\n    return image\n")
    (root / "stand_in_backend.py").write_text(textwrap.dedent(BACKEND_SOURCE))
    return root


@pytest.fixture
def worker(checkout: Path):
    backend = WorkerBackend("standin", Path(sys.executable), "stand_in_backend:StandInBackend", checkout, {"colour": 9})
    yield backend
    backend.close()


def test_a_worker_passes_images_both_ways_losslessly_and_keeps_its_stdout_clean(worker):
    sent = [Image.new("RGB", (5, 4), (1, 2, 3)), Image.new("RGBA", (3, 3), (4, 5, 6, 7))]
    reply = worker.call("echo", sent, label="x")
    assert reply["label"] == "x" and reply["sizes"] == [[5, 4], [3, 3]]
    assert [(image.mode, image.tobytes()) for image in reply["images"]] == [(i.mode, i.tobytes()) for i in sent]
    assert "torch" in worker.versions
    assert list(worker.exchange.glob("*.png")) == []  # every file read back is removed


def test_a_seeded_call_repeats_and_equals_the_same_backend_in_this_process(worker, checkout):
    first, again, other = (worker.call("draw", 4, seed=s) for s in (7, 7, 8))
    assert [i.tobytes() for i in first] == [i.tobytes() for i in again] != [i.tobytes() for i in other]
    sys.path.insert(0, str(checkout))
    try:
        local = InProcessBackend(worker_main.load_backend_class("stand_in_backend:StandInBackend", None)(colour=9))
        assert [i.tobytes() for i in local.call("draw", 4, seed=7)] == [i.tobytes() for i in first]
    finally:
        sys.path.remove(str(checkout))
        sys.modules.pop("stand_in_backend", None)


def test_a_failed_request_is_that_requests_error_and_the_worker_goes_on(worker):
    with pytest.raises(WorkerError, match="raised ValueError: the official code failed on this input"):
        worker.call("fail")
    with pytest.raises(WorkerError, match="private"):
        worker.call("_secret")
    assert worker.call("echo", [], label=1)["label"] == 1


def test_a_worker_that_dies_is_reported_with_its_exit_and_stderr(worker):
    with pytest.raises(WorkerError, match=r"worker stopped \(exit 3\).*official code prints this on stdout"):
        worker.call("crash")


def test_what_the_model_code_hands_back_passes_the_gate(worker, tmp_path, monkeypatch):
    """Images come back only as regular files inside the exchange folder, within the gate's limits; a symlink
    out of it, a path that climbs out, a file that is no image and a reply over the record limit are refused for
    that call (the run records it for its sample)."""
    secret = tmp_path / "secret.png"
    Image.new("RGB", (2, 2), "red").save(secret)
    with pytest.raises(gate.Refused):
        worker.call("hostile", "symlink", str(secret))
    with pytest.raises((gate.Refused, FileNotFoundError)):
        worker.call("hostile", "escape", str(secret.name))
    with pytest.raises(UnidentifiedImageError):
        worker.call("hostile", "not_an_image")
    assert worker.call("echo", [], label=3)["label"] == 3  # the worker goes on after refused replies
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", '{"record_chars": 1000}')
    with pytest.raises(WorkerError, match="over the gate's record limit"):
        worker.call("hostile", "huge")


def test_the_checkouts_own_datasets_package_wins_over_hugging_faces(worker, checkout):
    """Show-o2 imports ``datasets.utils`` from its checkout; nothing the worker imports first may load Hugging
    Face's ``datasets`` (installed here) under that name."""
    assert Path(worker.call("where_is_datasets")) == checkout / "datasets" / "utils.py"


def test_closing_stops_the_worker_and_removes_its_exchange_folder(checkout):
    backend = WorkerBackend("standin", Path(sys.executable), "stand_in_backend:StandInBackend", checkout, {"colour": 1})
    process, exchange = backend._process, backend.exchange
    backend.close()
    assert process.poll() == 0 and not exchange.exists()


def test_a_backend_that_cannot_be_built_fails_at_start_with_the_official_error(checkout):
    with pytest.raises(WorkerError, match="TypeError"):
        WorkerBackend("standin", Path(sys.executable), "stand_in_backend:StandInBackend", checkout, {"nope": 1})
    with pytest.raises(WorkerError, match="ModuleNotFoundError"):
        WorkerBackend("standin", Path(sys.executable), "not_there:Backend", checkout, {})


def test_the_probe_reports_import_failures_backend_findings_and_deadlines(checkout, monkeypatch):
    python = sys.executable
    monkeypatch.setenv("LMMS_EVAL_UNIFY_MODEL_ENVS", str(checkout.parent / "envs"))
    found = missing_in_environment("standin", python, "stand_in_backend:StandInBackend", checkout, {})
    assert found == []
    found = missing_in_environment("standin", python, "stand_in_backend:X", checkout, {"checkpoint": "absent"})
    assert [(m.kind, m.what) for m in found] == [("weights", "standin: the config loads 'absent' by name")]
    (checkout / "broken.py").write_text("import flash_attn_is_not_here\n")
    (found,) = missing_in_environment("standin", python, "broken:Backend", checkout, {})
    assert found.kind == "code" and "flash_attn_is_not_here" in found.what
    (checkout / "slow.py").write_text("import time\ntime.sleep(60)\n")
    (found,) = missing_in_environment("standin", python, "slow:Backend", checkout, {}, timeout=1)
    assert "did not finish within 1 s" in found.what and "LMMS_EVAL_UNIFY_PROBE_TIMEOUT" in found.fix


def test_env_current_runs_the_backend_in_this_process_and_a_missing_env_names_its_fix(checkout, tmp_path):
    sys.path.insert(0, str(checkout))
    try:
        backend = start_backend("standin", "current", "stand_in_backend:StandInBackend", None, {"colour": 3})
        assert isinstance(backend, InProcessBackend) and backend.call("echo", [], label=2)["label"] == 2
    finally:
        sys.path.remove(str(checkout))
        sys.modules.pop("stand_in_backend", None)
    (problem,) = missing_environment("standin", str(tmp_path / "nowhere"))
    assert "env create standin" in problem.fix and "nowhere" in problem.what
    with pytest.raises(WorkerError, match="environment of its own"):
        start_backend("standin", str(tmp_path / "nowhere"), "stand_in_backend:StandInBackend", checkout, {})


@pytest.mark.slow
def test_a_model_environment_created_from_scratch_runs_the_official_style_code_beside_conflicting_pins(
    checkout, tmp_path
):
    """The model's pin (huggingface-hub < 1, as Show-o2 and BAGEL need) shadows the evaluator's 1.x inside the
    environment only; torch and Pillow are shared; the worker and its backend run there."""
    assert int(huggingface_hub.__version__.split(".")[0]) >= 1
    pins = tmp_path / "pins.txt"
    pins.write_text("huggingface-hub==0.36.2\n")
    python = create_environment("standin", tmp_path / "env", pins)
    marker = json.loads((tmp_path / "env" / "lmms_eval_unify_env.json").read_text())
    assert marker["model"] == "standin" and any(line.startswith("torch==") for line in marker["shared"])
    backend = WorkerBackend("standin", python, "stand_in_backend:StandInBackend", checkout, {"colour": 5})
    try:
        assert backend.call("hub_version") == "0.36.2" == backend.versions["huggingface-hub"]
        assert backend.call("draw", 3, seed=1)[0].size == (3, 3)
    finally:
        backend.close()
    assert importlib.metadata.version("huggingface-hub") == huggingface_hub.__version__  # ours was never touched
    assert missing_environment("standin", str(tmp_path / "env")) == []
    assert stale_environment_warning(python) is None
    pins.write_text("huggingface-hub==0.36.1\n")  # the pins moved on since the environment was made
    warning = stale_environment_warning(python)
    assert warning and "made from other pins" in warning and "env create standin" in warning


def test_a_malformed_probe_deadline_is_named_not_replaced(monkeypatch):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_PROBE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="LMMS_EVAL_UNIFY_PROBE_TIMEOUT must be a positive number"):
        probe_timeout()
    monkeypatch.setenv("LMMS_EVAL_UNIFY_PROBE_TIMEOUT", "7.5")
    assert probe_timeout() == 7.5
