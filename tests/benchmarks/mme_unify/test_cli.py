"""MME-Unify end to end through the real lmms-eval CLI (oracle and random) and the leaderboard."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate

N_ITEMS = 6
TINY_METRICS = {
    "clip_choice": {"backbone": "tiny", "weights": "random"},
    "clip_score": {"backbone": "tiny", "weights": "random"},
    "lpips": {"weights": "random"},
    "fid": {"backbone": "tiny", "weights": "random"},
    "fvd": {"backbone": "tiny", "weights": "random"},
}
UNIFY_QA = ("iee", "csq", "al", "sd")
UNDERSTANDING = ("sipu", "mitiu", "vpu")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("mme_unify_data")
    generate(root, N_ITEMS, seed=3)
    return root


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _run(
    model: str, data_dir: Path, out_dir: Path, tasks: str = "mme_unify", variant: str = "corrected"
) -> tuple[dict, dict]:
    env = {
        **os.environ,
        "LMMS_EVAL_UNIFY_DATA_DIR": str(data_dir),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "LMMS_EVAL_UNIFY_MME_UNIFY_METRICS": json.dumps(TINY_METRICS),
    }
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    command = [_bin("lmms-eval"), "--model", model, "--tasks", tasks, "--output_path", str(out_dir)]
    done = subprocess.run([*command, "--log_samples"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(out_dir.rglob("*_results.json")).read_text())["results"]
    board = subprocess.run(
        [_bin("lmms-eval-unify"), "leaderboard", str(out_dir), "--benchmark", "mme_unify", "--no-plots"]
        + ["--variant", variant, "-o", str(out_dir / "board")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert board.returncode == 0, board.stderr[-3000:]
    return results, {"stdout": board.stdout}


def _metric(results: dict, task: str, name: str) -> float:
    return results[f"mme_unify_{task}"][f"{name},none"]


@pytest.mark.slow
def test_oracle_scores_100_on_every_programmatic_subtask(data_dir, tmp_path):
    results, board = _run("unify_oracle", data_dir, tmp_path / "oracle")
    for task in UNDERSTANDING:
        assert _metric(results, task, "acc") == 1.0
    for task in UNIFY_QA:
        assert _metric(results, task, "text_correct") == _metric(results, task, "image_correct") == 1.0
    steps = _metric(results, "vcot", "n_steps")
    for aspect in ("action", "coordinate"):
        assert _metric(results, "vcot", f"{aspect}_steps_correct") == steps
    image_steps = _metric(results, "vcot", "image_steps")
    assert _metric(results, "vcot", "image_steps_correct") == image_steps == pytest.approx(steps - 1)
    assert _metric(results, "fir", "lpips") == pytest.approx(0.0, abs=1e-6)
    for task in ("tie", "tig"):  # the generated image is the reference: cosine 1 up to float rounding
        assert _metric(results, task, "clip_i") == pytest.approx(1.0)
    for task in ("civg", "tvg", "vp"):
        assert _metric(results, task, "fvd") == pytest.approx(0.0, abs=1e-6)
    # every task reports invalid_outputs; the one TVG item without reference is skipped, not invalid
    assert all(results[t]["invalid_outputs,none"] == 0 for t in results if "invalid_outputs,none" in results[t])
    row = next(line for line in board["stdout"].splitlines() if line.startswith("| unify_oracle"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["100.00"] * 3  # SIPU, MITIU, VPU
    assert cells[12:17] == ["100.00"] * 5  # IEE, CSQ, AL, SD, VCoT
    assert "MME-U" in board["stdout"] and cells[-1] not in ("-", "")


@pytest.mark.slow
def test_random_runs_end_to_end_and_reports_every_metric(data_dir, tmp_path):
    results, board = _run("unify_random", data_dir, tmp_path / "random")
    for task in UNDERSTANDING:
        assert 0.0 <= _metric(results, task, "acc") < 1.0
    qa = [_metric(results, t, k) for t in UNIFY_QA for k in ("text_correct", "image_correct")]
    assert 0.05 < sum(qa) / len(qa) < 0.5  # chance 0.25 on 48 draws
    for task in ("fir", "tie", "tig", "civg", "tvg", "vp"):
        assert "invalid_outputs,none" in results[f"mme_unify_{task}"]
    assert _metric(results, "fir", "lpips") > 0
    assert any(line.startswith("| unify_random") for line in board["stdout"].splitlines())


@pytest.mark.slow
def test_official_group_runs_and_the_leaderboard_reads_it(data_dir, tmp_path):
    results, board = _run("unify_oracle", data_dir, tmp_path / "official", "mme_unify_official", "official")
    for task in ("csq", "al", "sd"):  # the oracle's letter and image are right: no released rule differs
        assert results[f"mme_unify_{task}_official"]["image_correct,none"] == 1.0
    vcot = results["mme_unify_vcot_official"]
    # released VSP: every step slot is image-scored, "Finish" never right; coordinates are compared raw
    assert vcot["image_steps,none"] == vcot["n_steps,none"]
    assert vcot["image_steps_correct,none"] == pytest.approx(vcot["n_steps,none"] - 1)
    assert vcot["coordinate_steps_correct,none"] == 0.0
    assert results["mme_unify_tie_official"]["clip_i,none"] == pytest.approx(1.0)
    assert "MME-Unify (Table 2), official variant" in board["stdout"]
    row = next(line for line in board["stdout"].splitlines() if line.startswith("| unify_oracle"))
    assert [c.strip() for c in row.strip("|").split("|")][1:4] == ["100.00"] * 3  # understanding tasks
