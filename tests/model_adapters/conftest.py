"""Fixtures of the adapter tests: generated offline data and a real ``lmms-eval`` CLI runner."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.puzzles.dataset import write_puzzles


def _load_tiny_models():
    """``tiny_models.py`` of this folder (loaded by path: the folder is not an importable package)."""
    spec = importlib.util.spec_from_file_location("adapter_tiny_models", Path(__file__).with_name("tiny_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tiny_models = _load_tiny_models()


@pytest.fixture(scope="session")
def tiny_janus(tmp_path_factory) -> Path:
    return tiny_models.write_tiny_janus(tmp_path_factory.mktemp("tiny_janus"))


@pytest.fixture(scope="session")
def tiny_emu3(tmp_path_factory) -> Path:
    return tiny_models.write_tiny_emu3(tmp_path_factory.mktemp("tiny_emu3"))


@pytest.fixture(scope="session")
def tiny_qwen_vl(tmp_path_factory) -> Path:
    return tiny_models.write_tiny_qwen2_5_vl(tmp_path_factory.mktemp("tiny_qwen_vl"))


@pytest.fixture(scope="session")
def tiny_qwen_edit(tmp_path_factory) -> Path:
    return tiny_models.write_tiny_qwen_image_edit(tmp_path_factory.mktemp("tiny_qwen_edit"))


@pytest.fixture
def run_cli():
    """:func:`run_lmms_eval` (fixtures stand in for imports: this folder is not an importable package)."""
    return run_lmms_eval


@pytest.fixture
def check_steps():
    """:func:`assert_step_outputs`."""
    return assert_step_outputs


@pytest.fixture(scope="session")
def puzzle_data(tmp_path_factory) -> Path:
    """Offline data in the local-data layout (``LMMS_EVAL_UNIFY_DATA_DIR``): three mazes and three sliding
    puzzles for ``uni_mmmu``, two items per UniG2U subtask for ``unig2u``."""
    from lmms_eval_unify.benchmarks.unig2u.offline.data import generate as generate_unig2u

    root = tmp_path_factory.mktemp("unify_data")
    write_puzzles(root / "uni_mmmu", 3, 3, seed=5)
    generate_unig2u(root, 2, 5)
    return root


def run_lmms_eval(
    model: str,
    model_args: str,
    tasks: str,
    data_dir: Path,
    out_dir: Path,
    limit: int = 2,
    extra: tuple = (),
    processes: int = 1,
) -> dict:
    """Run the real CLI offline (``processes > 1``: data parallel, ``torchrun`` on CPU); return
    ``{"results": ..., "samples": {task: [sample, ...]}, "log": stdout + stderr}``."""
    env = {
        **os.environ,
        "LMMS_EVAL_UNIFY_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "lmms-eval")]
    if processes > 1:
        # accelerate launch --cpu starts a single process; torchrun + ACCELERATE_USE_CPU gives gloo ranks.
        # --standalone: rendezvous on a free port, not the default 29500 (parallel test workers and runs).
        command = [str(bin_dir / "torchrun"), "--standalone", "--nproc_per_node", str(processes), "-m", "lmms_eval"]
        env["ACCELERATE_USE_CPU"] = "true"
    command += ["--model", model, "--model_args", model_args]
    command += [
        "--tasks",
        tasks,
        "--limit",
        str(limit),
        "--output_path",
        str(out_dir),
        "--log_samples",
        *extra,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    found = list(out_dir.rglob("*_results.json"))
    assert done.returncode == 0 and found, (done.stdout + done.stderr)[-4000:]  # lmms-eval exits 0 on errors
    results = json.loads(found[0].read_text())["results"]
    samples = {}
    for path in out_dir.rglob("*_samples_*.jsonl"):
        task = path.stem.split("_samples_", 1)[1]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return {"results": results, "samples": samples, "log": done.stdout + done.stderr}


def assert_step_outputs(sample: dict, model: str) -> None:
    """A maze/sliding sample answered by a real adapter: our record, every step image on disk and decodable."""
    response = sample["filtered_resps"]
    parsed = parse_output(response[0] if isinstance(response, list) else response)
    assert parsed.failure is None, parsed.failure
    record = parsed.record
    assert record.protocol == "image_sequence_then_answer"
    assert f"/{model}" in record.root
    assert record.steps and len(record.images) == sum(1 for s in record.steps if s.image)
    images = parsed.load_images()
    assert isinstance(images, list) and all(image.mode == "RGB" for image in images)
    assert sample["invalid_outputs"] == ""
