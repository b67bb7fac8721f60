"""The scripts under ``bench/`` stay runnable: each one imports against the current package, and the scoring
bench measures a real (small) offline run end to end."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_bench_folder_has_scripts():
    assert len(SCRIPTS) >= 7


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_imports(script: Path, monkeypatch):
    """Module-level code (imports of the package, of test helpers) runs, not the measurement; each script
    says how to run it in its docstring."""
    monkeypatch.syspath_prepend(str(BENCH))
    namespace = runpy.run_path(str(script), run_name="bench_import_check")
    assert namespace["__doc__"] and "python" in namespace["__doc__"] + script.read_text()


@pytest.mark.slow
def test_scoring_bench_measures_an_oracle_run(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    env = offline_env(data)
    generate = [str(BIN / "lmms-eval-unify"), "data", "generate", "uni_mmmu", "--out", str(data), "--n", "4"]
    subprocess.run(generate, env=env, check=True, capture_output=True)
    run = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze,uni_mmmu_sliding",
           "--output_path", str(out), "--log_samples"]  # fmt: skip
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    bench = [sys.executable, str(BENCH / "scoring_bench.py"), str(data), str(out), "--repeats", "1",
             "--corpus", "20"]  # fmt: skip
    done = subprocess.run(bench, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for task in ("maze", "sliding"):
        assert f"uni_mmmu_{task}: 20 corpus images" in done.stdout
        assert f"uni_mmmu_{task}: " in done.stdout and "samples/s/core" in done.stdout


@pytest.mark.subprocess
def test_generation_bench_primitive_mode_times_batched_janus_and_checks_equality(tmp_path):
    bench = [
        sys.executable,
        str(BENCH / "generation_bench.py"),
        "--primitive",
        "--batch",
        "3",
        "--images",
        "6",
    ]
    done = subprocess.run(bench, env=offline_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batch 3" in done.stdout and "batched == one-by-one for 6/6 images" in done.stdout


def test_janus_pro_1b_shape_is_the_full_architecture():
    """The GPU bench's random checkpoint: Janus-Pro-1B's layer sizes (built on the meta device, no weights)."""
    import torch
    from transformers import JanusForConditionalGeneration

    tiny_models = runpy.run_path(str(BENCH.parent / "tests" / "model_adapters" / "tiny_models.py"))
    config = tiny_models["janus_config"]("janus-pro-1b", vocab_size=60, image_token_id=4)
    with torch.device("meta"):
        model = JanusForConditionalGeneration(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(1.867e9, rel=1e-3)
    assert config.vision_config.num_image_tokens == 576 and config.vision_config.image_size == 384
    assert config.vq_config.num_embeddings == 16384 and config.text_config.num_hidden_layers == 24
