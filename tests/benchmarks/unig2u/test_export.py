"""`lmms-eval-unify export --benchmark unig2u`: real CLI runs of the baselines on generated data (judged
against the local reference judge), exported and read back -- which must give our leaderboard's per-subtask
scores."""

from __future__ import annotations

import pytest
from cli_runs import judged_cli_runs, offline_env
from export_runs import MODELS, NO_RESAMPLING, board_values, export_cli

from lmms_eval_unify.benchmarks.unig2u import export as unig2u_export
from lmms_eval_unify.benchmarks.unig2u import leaderboard as unig2u_leaderboard
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate as generate_unig2u
from lmms_eval_unify.benchmarks.unig2u.reference_judge import verdict as unig2u_verdict
from lmms_eval_unify.reports.results_io import load_results


@pytest.mark.slow
def test_unig2u_summary_gives_the_leaderboard_subtask_scores(tmp_path):
    generate_unig2u(tmp_path / "data", 3, seed=9)
    tasks = "unig2u_chartqa,unig2u_geometry,unig2u_vsp_reason,unig2u_chartqa_gta"
    judged_cli_runs(tmp_path / "runs", tasks, unig2u_verdict, offline_env(tmp_path / "data"), MODELS)
    export_cli(tmp_path / "runs", "unig2u", tmp_path / "export")
    boards, _ = unig2u_leaderboard.boards(load_results([tmp_path / "runs"]), {}, NO_RESAMPLING)
    rows = board_values(boards[1])
    for model in MODELS:
        summary = unig2u_export.read(tmp_path / "export" / model / "unig2u")
        assert sorted(summary) == sorted(tasks.split(","))
        assert all(not k.startswith("alias") and "stderr" not in k for m in summary.values() for k in m)
        for subtask in ("chartqa", "geometry", "vsp_reason"):
            assert 100 * summary[f"unig2u_{subtask}"]["acc,none"] == pytest.approx(rows[f"{model} (direct)"][subtask])
        assert 100 * summary["unig2u_chartqa_gta"]["acc,none"] == pytest.approx(rows[f"{model} (GtA)"]["chartqa"])


def test_two_configurations_of_one_model_get_their_own_summaries(tmp_path):
    """Each configuration's summary holds its own results file's values (they were matched by recorded name)."""
    import json

    from leaderboard_runs import write_configured_run

    from lmms_eval_unify.reports.exports import export, safe_name

    for seed, score in (("1", 1.0), ("2", 0.0)):
        write_configured_run(tmp_path / "runs" / seed, "echo_painter", f"seed={seed}",
                             {"unig2u_chartqa": [{"acc": score}, {"acc": score}]})  # fmt: skip
    export([tmp_path / "runs"], "unig2u", tmp_path / "out")
    for seed, score in (("1", 1.0), ("2", 0.0)):
        folder = tmp_path / "out" / safe_name(f"echo_painter (seed={seed})") / "unig2u"
        assert json.loads((folder / "summary.json").read_text())["unig2u_chartqa"]["acc,none"] == score


def test_a_task_with_no_scored_sample_is_left_out_of_the_summary_as_the_leaderboards_dash(tmp_path, capsys):
    """chartqa judge-failed on every sample: its acc 0 would enter the released collector's numbers as a score."""
    from lmms_eval_unify.reports.exports import main
    from lmms_eval_unify.testing.synthetic import write_run

    failed = {"acc": 0.0, "invalid_outputs": "judge_failed"}
    write_run(tmp_path / "runs", "m", {"unig2u_chartqa": [failed] * 2, "unig2u_maze": [{"acc": 1.0}]})
    assert main([str(tmp_path / "runs"), "--benchmark", "unig2u", "--out", str(tmp_path / "out")]) == 0
    assert list(unig2u_export.read(tmp_path / "out" / "m" / "unig2u")) == ["unig2u_maze"]
    assert "m/unig2u_chartqa: left out, no sample scored" in capsys.readouterr().err


def test_a_task_run_as_shards_exports_the_values_of_one_run(tmp_path, capsys):
    """Three ``--offset``/``--limit`` shards give the summary one run gives (before: the last shard's values)."""
    import json

    from leaderboard_runs import write_shards

    from lmms_eval_unify.reports.exports import main
    from lmms_eval_unify.testing.synthetic import write_run

    def set_results(results_file, acc, invalid) -> None:
        """The task's entry as lmms-eval writes it (the synthetic writer averages every numeric key)."""
        results = json.loads(results_file.read_text())
        entry = {"alias": "chartqa", "acc,none": acc, "acc_stderr,none": 0.1, "invalid_outputs,none": invalid}
        results["results"] = {"unig2u_chartqa": entry}
        results_file.write_text(json.dumps(results))

    rows = [{"doc_id": i, "input": f"q{i}", "acc": float(i % 3 == 0), "invalid_outputs": ""} for i in range(10)]
    rows[4] |= {"acc": None, "invalid_outputs": "unsupported"}
    set_results(write_run(tmp_path / "whole", "uni-model", {"unig2u_chartqa": rows}), 4 / 9, 1)
    write_shards(tmp_path / "sharded", {"unig2u_chartqa": rows}, [(0, 2), (2, 7), (7, 10)])
    for shard in (tmp_path / "sharded").glob("shard*/uni-model/*_results.json"):
        set_results(shard, 0.5, 0)  # one shard's own values, which a merged summary must not report
    summaries = {}
    for name in ("whole", "sharded"):
        assert main([str(tmp_path / name), "--benchmark", "unig2u", "--out", str(tmp_path / f"out-{name}")]) == 0
        summaries[name] = unig2u_export.read(tmp_path / f"out-{name}" / "uni-model" / "unig2u")
    # the whole run's lmms-eval aggregates: the mean over the 9 supported samples, 1 invalid output
    assert (
        summaries["sharded"] == summaries["whole"] == {"unig2u_chartqa": {"acc,none": 4 / 9, "invalid_outputs,none": 1}}
    )
    assert "unig2u_chartqa: 3 shards; values computed over their 10 merged samples" in capsys.readouterr().err


def test_damaged_sample_values_in_shards_count_as_wrong_not_as_a_crash(tmp_path):
    import json

    from leaderboard_runs import write_shards

    from lmms_eval_unify.reports.exports import main

    rows = [{"doc_id": i, "input": f"q{i}", "acc": 1.0, "invalid_outputs": ""} for i in range(4)]
    write_shards(tmp_path / "sharded", {"unig2u_chartqa": rows}, [(0, 2), (2, 4)])
    damaged = {1: {"acc": "1.0"}, 2: {"acc": {"nested": 1}}, 3: {"invalid_outputs": ["not", "a", "reason"]}}
    for samples in (tmp_path / "sharded").glob("shard*/uni-model/*_samples_unig2u_chartqa.jsonl"):
        records = [json.loads(line) for line in samples.read_text().splitlines()]
        samples.write_text("".join(json.dumps(r | damaged.get(r["doc_id"], {})) + "\n" for r in records))
    assert main([str(tmp_path / "sharded"), "--benchmark", "unig2u", "--out", str(tmp_path / "out")]) == 0
    summary = unig2u_export.read(tmp_path / "out" / "uni-model" / "unig2u")
    assert summary["unig2u_chartqa"]["acc,none"] == 0.5  # the text and the dict count as 0, not as a score


def test_the_merged_aggregations_are_the_tasks_own():
    """``export.AGGREGATIONS`` names what every UniG2U task's ``metric_list`` aggregates with."""
    from lmms_eval.utils import load_yaml_config

    from lmms_eval_unify.run.paths import tasks_path

    configs = [load_yaml_config(str(path)) for path in sorted((tasks_path() / "unig2u").glob("unig2u_*.yaml"))]
    tasks = [config for config in configs if "group" not in config]
    assert len(tasks) >= 60  # 30 subtasks, each Direct and GtA
    for config in tasks:
        aggregations = {m["metric"]: m["aggregation"] for m in config["metric_list"]}
        assert aggregations == unig2u_export.AGGREGATIONS, config["task"]
