"""One switch selects the tiny offline backbones for every metric, and everything built from such a run says it
is not comparable (issue 26 item 5)."""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_runs import BIN, offline_env

from lmms_eval_unify.integration.paper_scores import CAVEAT_LEGEND_KEY
from lmms_eval_unify.metrics.config import (
    DEFAULT_BACKBONES,
    RANDOM_WEIGHTS,
    TINY_DREAMSIM_TYPE,
    resolve_config,
)
from lmms_eval_unify.metrics.dreamsim_metric import weights_dir
from lmms_eval_unify.metrics.switches import TINY_METRICS_ENV
from lmms_eval_unify.metrics.tiny import CACHE_ENV, tiny_configs


def test_the_switch_gives_every_family_its_tiny_backbone_and_explicit_arguments_still_win(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert resolve_config("clip_score").weights != RANDOM_WEIGHTS
    monkeypatch.setenv(TINY_METRICS_ENV, "1")
    monkeypatch.setenv("LMMS_EVAL_UNIFY_CLIP_SCORE_BACKBONE", "ViT-L-14")  # the switch is above env settings
    switched = {family: resolve_config(family) for family in DEFAULT_BACKBONES}
    tiny = tiny_configs(tmp_path / "tiny_dreamsim")
    assert {f: c for f, c in switched.items() if f != "dreamsim"} == {f: c for f, c in tiny.items() if f != "dreamsim"}
    assert (switched["dreamsim"].backbone, switched["dreamsim"].weights) == (TINY_DREAMSIM_TYPE, RANDOM_WEIGHTS)
    assert not (tmp_path / "tiny_dreamsim").exists()
    assert weights_dir(switched["dreamsim"]) == str(tmp_path / "tiny_dreamsim")  # built on first use, in the cache
    assert sorted(p.name for p in (tmp_path / "tiny_dreamsim").iterdir())
    assert resolve_config("fid", backbone="inception_v3", weights="w.pt").weights == "w.pt"


@pytest.mark.slow
def test_a_run_on_tiny_metrics_needs_no_weights_and_is_labelled_everywhere(tmp_path):
    data, out = tmp_path / "data", tmp_path / "run"
    env = {**offline_env(data), TINY_METRICS_ENV: "1", CACHE_ENV: str(tmp_path / "cache"), "HOME": str(tmp_path)}
    for benchmark in ("uni_mmmu", "mme_unify"):
        subprocess.run([str(BIN / "lmms-eval-unify"), "data", "generate", benchmark, "--out", str(data), "--n", "3"],
                       env=env, check=True, capture_output=True)  # fmt: skip
    run = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_jigsaw,mme_unify_fir",
           "--output_path", str(out), "--log_samples"]  # fmt: skip
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(out.glob("*_results.json")).read_text())
    assert results["lmms_eval_unify"]["tiny_metrics"] is True
    assert results["results"]["uni_mmmu_jigsaw"]["invalid_outputs,none"] == 0
    codes = results["results"]["uni_mmmu"]["caveats,paper"].split()  # codes, each spelt out once for the run
    legend = sorted(results[CAVEAT_LEGEND_KEY][code] for code in codes)
    assert len(legend) == 2 and "generated data" in legend[0] and "tiny random backbones" in legend[1], legend
    cli = str(BIN / "lmms-eval-unify")
    for command in ([cli, "leaderboard", str(out), "--no-plots", "-o", str(tmp_path / "b")],
                    [cli, "gallery", str(out), "-o", str(tmp_path / "site")],
                    [cli, "export", str(out), "--benchmark", "uni_mmmu", "--out", str(tmp_path / "x")]):  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    label = "metrics on tiny random backbones (LMMS_EVAL_UNIFY_TINY_METRICS), not comparable to published numbers"
    assert label in (tmp_path / "b" / "leaderboard.md").read_text()
    assert label in (tmp_path / "site" / "index.html").read_text()
    assert label in (tmp_path / "x" / "NOT_COMPARABLE.txt").read_text()
