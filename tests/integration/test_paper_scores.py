"""The run's paper scores (``integration/paper_scores.py``, added by the run hook): the rows lmms-eval-unify adds
to ``simple_evaluate``'s results hold what ``lmms-eval-unify leaderboard`` computes from the same samples."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_runs import BIN, offline_env
from leaderboard_runs import gapeval_tasks, read_csv, run
from log_capture import logged

from lmms_eval_unify.benchmarks import part
from lmms_eval_unify.benchmarks.gapeval.spec import CATEGORIES as GAPEVAL_CATEGORIES
from lmms_eval_unify.benchmarks.mme_unify.leaderboard import ABOVE_SCALE
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.integration import paper_scores as paper_scores_module
from lmms_eval_unify.integration import preflight, run_hooks
from lmms_eval_unify.integration.paper_scores import (
    CAVEAT_LEGEND_KEY,
    add_paper_scores,
    caveat_codes,
    legend_lines,
    logged_row,
    value_caveats,
)
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.reports import leaderboard as leaderboard_module
from lmms_eval_unify.reports.boards import Row
from lmms_eval_unify.reports.comparability import Caveat
from lmms_eval_unify.reports.render import MISSING, SAMPLE_COLUMNS
from lmms_eval_unify.run import context as run_context
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.testing.synthetic import write_run

MODEL = "uni-model"
UNIG2U_SUBTASKS = ug.SUBTASKS[:2]
MME_UNIFY = {
    "mme_unify_sipu": [{"acc": 1}, {"acc": 0}, {"acc": 1}],
    "mme_unify_mitiu": [{"acc": 1}, {"acc": 1}],
    "mme_unify_tig": [{"unsupported": True}] * 2,
    "mme_unify_iee": [{"text_correct": 1, "image_correct": 0}, {"text_correct": 1, "image_correct": 1}],
}
MME_UNIFY_GROUPS = {
    "mme_unify": ["mme_unify_understanding", "mme_unify_generation", "mme_unify_unify"],
    "mme_unify_understanding": ["mme_unify_sipu", "mme_unify_mitiu"],
    "mme_unify_generation": ["mme_unify_tig"],
    "mme_unify_unify": ["mme_unify_iee"],
}
UNIG2U = {
    **{ug.task_name(s): [{"acc": 1.0}, {"acc": 0.0}] for s in UNIG2U_SUBTASKS},
    **{ug.task_name(s, "_gta"): [{"acc": 1.0}, {"acc": 1.0}] for s in UNIG2U_SUBTASKS},
}


def lmms_eval_results(tasks: dict[str, list[dict]], groups: dict[str, list[str]]) -> dict:
    """``simple_evaluate``'s results of a run of `tasks` (their metric rows) in `groups` (top-level tasks
    outside them), with the samples as lmms-eval keeps them in memory (doc and request arguments included,
    not sorted)."""
    grouped = {t for children in groups.values() for t in children}
    group_subtasks = {**groups, **{t: [] for t in tasks if t not in grouped}}
    results = {g: {" ": " ", "alias": g} for g in groups}
    results |= {t: {"alias": t, "acc,none": 0.5} for t in tasks}
    samples = {
        task: [
            {"doc_id": i, "doc": {"q": i}, "arguments": [f"prompt {i}", {}], "filtered_resps": ["a"], **row}
            for i, row in reversed(list(enumerate(rows)))
        ]
        for task, rows in tasks.items()
    }
    return {
        "results": results,
        "group_subtasks": group_subtasks,
        "configs": {t: {"task": t} for t in tasks},
        "n-shot": {t: 0 for t in tasks},
        "n-samples": {t: {"original": len(r), "effective": len(r)} for t, r in tasks.items()},
        "config": {"model": "unify_oracle", "model_args": f"pretrained={MODEL}"},
        "samples": samples,
    }


def leaderboard_csvs(tmp_path: Path, tasks: dict[str, list[dict]], *flags: str) -> Path:
    """The folder of ``lmms-eval-unify leaderboard``'s CSVs (no bootstrap) over a run folder of `tasks`."""
    runs, out = tmp_path / "runs", tmp_path / ("board" + "".join(flags))
    if not runs.exists():
        write_run(runs, MODEL, tasks)
    assert run([runs, "-o", out, "--bootstrap", "0", "--no-plots", *flags]) == 0
    return out


def values_of(csv_row: dict[str, str]) -> dict[str, str]:
    """The value columns of a leaderboard CSV row (no model, interval, sample-count or caveat columns)."""
    extra = (*SAMPLE_COLUMNS, "ci_low", "ci_high", "caveats")
    return {c: t for c, t in csv_row.items() if c != "model" and c.rpartition(" ")[2] not in extra}


def assert_row_matches(row: dict, csv_row: dict[str, str], name: str) -> None:
    """Every value of a leaderboard CSV row is in `row` as ``"<column>,<name>"``, the same number or None."""
    for column, text in values_of(csv_row).items():
        value = row[f"{column},{name}"]
        if text == MISSING:
            assert value is None, (column, value)
        else:
            assert value == pytest.approx(float(text), abs=1e-4), (column, value, text)


def test_group_rows_hold_the_leaderboards_paper_tables(tmp_path):
    """MME-Unify run as its group: the group's row; UniG2U tasks run alone: a row named after the benchmark,
    with the direct and GtA rows of Table 4 told apart by their filter."""
    results = lmms_eval_results({**MME_UNIFY, **UNIG2U}, MME_UNIFY_GROUPS)
    untouched = copy.deepcopy(results["results"]["mme_unify_understanding"])
    assert add_paper_scores(results, MODEL) == ["mme_unify", "unig2u"]
    boards = leaderboard_csvs(tmp_path, {**MME_UNIFY, **UNIG2U})

    mme = results["results"]["mme_unify"]
    assert mme["alias"] == "mme_unify" and " " not in mme
    assert_row_matches(mme, read_csv(boards / "mme_unify_table2.csv")[MODEL], "paper")
    assert mme["n,paper"] == sum(map(len, MME_UNIFY.values()))
    assert results["results"]["mme_unify_understanding"] == untouched

    g2u = results["results"]["unig2u"]
    assert "paper" in g2u["alias"]
    table4 = read_csv(boards / "unig2u_table4.csv")
    assert_row_matches(g2u, table4[f"{MODEL} (direct)"], "paper (direct)")
    assert_row_matches(g2u, table4[f"{MODEL} (GtA)"], "paper (GtA)")
    assert g2u["n,paper"] == sum(map(len, UNIG2U.values()))
    assert results["group_subtasks"]["unig2u"] == sorted(UNIG2U)
    assert {k: results["groups"][k] for k in ("mme_unify", "unig2u")} == {"mme_unify": mme, "unig2u": g2u}


def test_the_rows_carry_invalid_counts_and_say_when_the_run_asked_part_of_a_dataset():
    tasks = {"mme_unify_sipu": [{"acc": 1}, {"acc": 0, "invalid_outputs": "missing_image"}, {"acc": 1}]}
    results = lmms_eval_results(tasks, {})
    full = copy.deepcopy(results)
    add_paper_scores(full, MODEL)
    row = full["results"]["mme_unify"]
    assert (row["n,paper"], row["invalid,paper"]) == (3, 1) and "caveats,paper" not in row

    results["config"] |= {"limit": 3, "offset": 0}
    results["n-samples"]["mme_unify_sipu"]["original"] = 1200
    add_paper_scores(results, MODEL)
    row = results["results"]["mme_unify"]
    assert row["caveats,paper"] == "C1"  # a code in the printed tables, spelt out once for the run
    assert results[CAVEAT_LEGEND_KEY] == {"C1": "part of the dataset (--limit 3): 3 of 1200 items in mme_unify_sipu"}
    assert legend_lines(results)[1:] == ["  C1 = part of the dataset (--limit 3): 3 of 1200 items in mme_unify_sipu"]
    from lmms_eval.utils import make_table

    table = make_table(copy.deepcopy(results), "groups")
    assert "C1" in [
        cell.strip() for cell in next(line for line in table.splitlines() if "|caveats " in line).split("|")
    ]


def test_a_subtask_with_no_scored_sample_gives_no_average_and_fails_the_run_alike():
    """SIPU with every sample invalid: the run's Und. Avg and MME-U are null as the leaderboard's '—' (they counted
    it as 0 before), and the run fails on it (exit 1): the table and the exit status say the same thing."""
    failed = {"acc": 0, "invalid_outputs": "model_error"}
    tasks = {"mme_unify_sipu": [failed] * 3, "mme_unify_mitiu": MME_UNIFY["mme_unify_mitiu"]}
    results = lmms_eval_results(tasks, {})
    results["results"]["mme_unify_sipu"]["invalid_outputs,none"] = 3
    add_paper_scores(results, MODEL)
    row = results["results"]["mme_unify"]
    assert (row["SIPU,paper"], row["Und. Avg,paper"], row["MME-U,paper"], row["MITIU,paper"]) == (None, None, None, 100)
    status = run_status.RunStatus(requested=sorted(tasks))
    run_hooks.record_outcome(status, results)
    assert status.failed == {"mme_unify_sipu": "all 3 samples invalid"} and not status.ok


def test_a_video_score_over_100_is_noted_in_the_runs_table():
    """The oracle's VP of 100.1 (FVD/FID distance 0) is kept, as released, with a caveat code saying why."""
    results = lmms_eval_results({"mme_unify_vp": [{"fvd": 0.0, "fid": 0.0}] * 2}, {})
    add_paper_scores(results, MODEL)
    row = results["results"]["mme_unify"]
    assert row["VP,paper"] == pytest.approx(100_000 / 999) and row["caveats,paper"] == "C1"
    assert results[CAVEAT_LEGEND_KEY]["C1"].startswith(ABOVE_SCALE)


def test_lmms_evals_tables_print_the_rows():
    from lmms_eval.utils import make_table

    results = lmms_eval_results({**MME_UNIFY, **UNIG2U}, MME_UNIFY_GROUPS)
    add_paper_scores(results, MODEL)
    for column in ("results", "groups"):
        table = make_table(copy.deepcopy(results), column)
        assert "|paper (GtA) " in table and "|MME-U " in table and "N/A" in table  # None cells print N/A
        assert "unig2u (paper scores of the tasks run)" in table


def test_both_scoring_variants_where_they_differ(tmp_path):
    tasks = {
        "mme_unify_sipu": MME_UNIFY["mme_unify_sipu"],
        "mme_unify_iee": MME_UNIFY["mme_unify_iee"],
        "mme_unify_iee_official": [{"text_correct": 1, "image_correct": 1}] * 2,
    }
    results = lmms_eval_results(tasks, {})
    add_paper_scores(results, MODEL)
    row = results["results"]["mme_unify"]
    corrected = read_csv(leaderboard_csvs(tmp_path, tasks) / "mme_unify_table2.csv")[MODEL]
    official = read_csv(leaderboard_csvs(tmp_path, tasks, "--variant", "official") / "mme_unify_table2_official.csv")
    official = official[MODEL]
    assert_row_matches(row, corrected, "paper")
    differing = {c: t for c, t in values_of(official).items() if t != corrected[c]}
    assert {"IEE", "MME-U"} <= set(differing)
    assert_row_matches(row, differing, "paper --variant official")
    assert {k for k in row if "official" in k} == {f"{c},paper --variant official" for c in differing}


def test_only_the_official_variant_run_is_scored_under_its_flag(tmp_path):
    tasks = {"mme_unify_sipu": MME_UNIFY["mme_unify_sipu"], "mme_unify_iee_official": MME_UNIFY["mme_unify_iee"]}
    results = lmms_eval_results(tasks, {"mme_unify_official": sorted(tasks)})
    add_paper_scores(results, MODEL)
    row = results["results"]["mme_unify_official"]
    board = leaderboard_csvs(tmp_path, tasks, "--variant", "official") / "mme_unify_table2_official.csv"
    assert_row_matches(row, read_csv(board)[MODEL], "paper --variant official")
    assert [k for k in row if k.endswith(",paper")] == ["n,paper", "invalid,paper"]  # no corrected-variant scores


@pytest.mark.subprocess  # the Gap fit runs in a child interpreter, as in the leaderboard
def test_the_gap_scores_are_the_leaderboards(tmp_path):
    tasks = gapeval_tasks([1, 1, 1, 0], [1, 0, 1, 0])
    results = lmms_eval_results(tasks, {"gapeval": sorted(tasks)})
    add_paper_scores(results, MODEL)
    row = results["results"]["gapeval"]
    assert_row_matches(row, read_csv(leaderboard_csvs(tmp_path, tasks) / "gapeval_table2.csv")[MODEL], "paper")
    assert any(k.endswith(" Gap,paper") and v is not None for k, v in row.items())


@pytest.mark.subprocess  # the Gap fit runs in a child interpreter, as in the leaderboard
def test_the_run_caveats_name_an_unconverged_gap_fit():
    """The default (official) Gap fit never converges: the run's paper scores say so, for the cells it gave."""
    results = lmms_eval_results(gapeval_tasks([1, 1, 1, 0], [1, 0, 1, 0]), {})
    add_paper_scores(results, MODEL)
    code = results["results"]["gapeval"]["caveats,paper"]
    caveats = results[CAVEAT_LEGEND_KEY][code]
    keys = ", ".join([*(f"{c} Gap" for c in GAPEVAL_CATEGORIES), "Overall Gap"])
    assert caveats.startswith("Gap fit not converged: official fit did not converge after its fixed 2000 ")
    assert "converged = full Newton step < 1e-05" in caveats and "the converged stable fit differs by up to" in caveats
    assert caveats.endswith(f" in {keys}")


def test_value_caveats_are_one_line_per_reason_and_none_for_unmarked_rows():
    marked = Row("m", {"a": 1.0, "b": 2.0, "c": 3.0}, caveats={"a": ("fit",), "b": ("fit", "other")})
    assert value_caveats([marked]) == ["a, b: fit", "b: other"]
    assert [(c.reason, c.subject) for c in value_caveats([marked])] == [("fit", "a, b"), ("other", "b")]
    assert value_caveats([Row("n", {"a": 1.0})]) == []


def test_caveat_codes_are_one_per_reason_shared_by_the_rows_and_spelt_out_once():
    limit = "part of the dataset (--limit 3)"
    by_row = {
        "mme_unify": [Caveat("s: 3 of 9", limit, "s", "3 of 9 items"), Caveat("t: tiny", "tiny metrics", "t")],
        "unig2u": [],
        "gapeval": [Caveat("g: 3 of 9", limit, "g", "3 of 9 items"), Caveat("Gap: fit", "fit", "Gap", "3 steps")],
    }
    codes, legend = caveat_codes(by_row)
    assert codes == {"mme_unify": "C1 C2", "gapeval": "C1 C3"}
    assert legend == {"C1": f"{limit}: 3 of 9 items in s, g", "C2": "tiny metrics: t", "C3": "fit: 3 steps in Gap"}


def test_samples_read_as_their_jsonl_lines():
    """Values lmms-eval's writer turns into text (numpy float32) read as text; doc and arguments are not written."""
    row = logged_row({"doc_id": np.int64(3), "doc": {"q": 1}, "arguments": ["p"], "acc": np.float32(0.5)})
    assert row == {"doc_id": 3, "acc": "0.5"}
    assert json.dumps(row)


@pytest.fixture
def warnings():
    with logged("WARNING") as caught:
        yield caught


def test_a_failing_benchmark_is_one_warning_and_the_others_are_added(monkeypatch, warnings):
    def fail_to_start(*args, **kwargs):
        raise RuntimeError("board broke")

    def fail_to_finish(*args, **kwargs):
        def finish():
            raise ValueError("finish broke")

        return finish

    monkeypatch.setattr(part("unig2u", "leaderboard"), "start", fail_to_start)
    results = lmms_eval_results({**MME_UNIFY, **UNIG2U}, MME_UNIFY_GROUPS)
    assert add_paper_scores(results, MODEL) == ["mme_unify"]
    assert len(warnings) == 1 and "unig2u" in warnings[0] and "board broke" in warnings[0]

    monkeypatch.setattr(part("mme_unify", "leaderboard"), "start", fail_to_finish)
    warnings.clear()
    assert add_paper_scores(lmms_eval_results(MME_UNIFY, MME_UNIFY_GROUPS), MODEL) == []
    assert len(warnings) == 1 and "mme_unify" in warnings[0] and "finish broke" in warnings[0]

    warnings.clear()
    broken = {"samples": {"mme_unify_sipu": None}, "results": {}}
    assert add_paper_scores(broken, MODEL) == []
    assert len(warnings) == 1 and "paper scores not added" in warnings[0]


@pytest.mark.parametrize("stage", ["import", "flags", "labels"])
def test_a_benchmark_whose_leaderboard_cannot_load_costs_only_its_own_row(monkeypatch, warnings, stage):
    """One benchmark's leaderboard failing to import, to add its flags or to name its models loses only that
    benchmark's paper scores (a warning names it); every other benchmark's row is still added."""
    real_part = part

    def failing_part(benchmark: str, name: str):
        if benchmark == "unig2u" and name == "leaderboard" and stage == "import":
            raise ImportError("unig2u's leaderboard broke")
        return real_part(benchmark, name)

    monkeypatch.setattr(paper_scores_module, "part", failing_part)
    monkeypatch.setattr(leaderboard_module, "part", failing_part)
    if stage != "import":

        def broke(*args, **kwargs):
            raise RuntimeError("unig2u's leaderboard broke")

        monkeypatch.setattr(part("unig2u", "leaderboard"), "add_arguments" if stage == "flags" else "labels", broke)
    results = lmms_eval_results({**MME_UNIFY, **UNIG2U}, MME_UNIFY_GROUPS)
    assert add_paper_scores(results, MODEL) == ["mme_unify"]
    assert any(key.endswith(",paper") for key in results["results"]["mme_unify"])
    assert "unig2u" not in results["results"]
    assert len(warnings) == 1 and "unig2u" in warnings[0] and "leaderboard broke" in warnings[0]


def test_one_benchmarks_failing_leaderboard_leaves_the_other_three_rows(monkeypatch, warnings):
    """A run of all four benchmarks whose GapEval leaderboard raises: MME-Unify's, UniG2U's and Uni-MMMU's rows
    are still added to the results (what lmms-eval writes to results.json), one warning names GapEval."""

    def broke(*args, **kwargs):
        raise RuntimeError("gapeval's leaderboard broke")

    monkeypatch.setattr(part("gapeval", "leaderboard"), "start", broke)
    maze = {"uni_mmmu_maze": [{"text_step_acc": 0.5, "text_sample_acc": 0.0}] * 2}
    results = lmms_eval_results({**MME_UNIFY, **UNIG2U, **maze, **gapeval_tasks([1, 0], [1, 1])}, MME_UNIFY_GROUPS)
    assert add_paper_scores(results, MODEL) == ["mme_unify", "unig2u", "uni_mmmu"]
    for row in ("mme_unify", "unig2u", "uni_mmmu"):
        assert any(",paper" in key for key in results["results"][row]), row
    assert "gapeval" not in results["results"]
    assert len(warnings) == 1 and "gapeval" in warnings[0] and "leaderboard broke" in warnings[0]


@pytest.fixture
def hooked_run(monkeypatch):
    """``run_hooks._simple_evaluate`` around a stand-in for lmms-eval's ``simple_evaluate``; records the
    ``log_samples`` it was called with."""
    monkeypatch.setattr(run_context, "_current", None)
    monkeypatch.setattr(run_status, "_status", run_status.RunStatus())
    monkeypatch.setenv(preflight.SKIP_ENV, "1")
    monkeypatch.setattr(preflight, "leaf_task_configs", lambda manager, names: {t: {} for t in MME_UNIFY})
    asked: list[bool] = []

    def evaluate(**kwargs):
        """What lmms-eval 0.7.3 returns, with what it derives from the samples when it logs them."""
        asked.append(kwargs["log_samples"])
        results = lmms_eval_results(MME_UNIFY, MME_UNIFY_GROUPS)
        if kwargs["log_samples"]:
            results["efficiency"] = {"overall": {"docs": 9.0}}
            for task in MME_UNIFY if kwargs.get("baseline") else ():
                results["results"][task]["paired_pvalue"] = 0.5
        else:
            del results["samples"]
        return results

    def call(**kwargs):
        return run_hooks._simple_evaluate(evaluate, model="unify_oracle", tasks=["mme_unify"], task_manager=object(),
                                          **kwargs)  # fmt: skip

    call.asked = asked
    return call


@pytest.mark.parametrize("log_samples", [False, True])
def test_the_hook_adds_the_scores_and_returns_samples_only_if_asked(hooked_run, log_samples):
    """Without ``--log_samples`` the run is made with samples; they and what lmms-eval derives from them are
    removed again, so the results differ from an unhooked run's only by the paper scores."""
    results = hooked_run(log_samples=log_samples, baseline="a-baseline")
    assert hooked_run.asked == [True]
    assert ("samples" in results) == ("efficiency" in results) == log_samples
    assert any(k.startswith("paired_") for k in results["results"]["mme_unify_sipu"]) == log_samples
    assert results["results"]["mme_unify"]["MME-U,paper"] is not None


def test_the_hook_never_fails_the_run(hooked_run, monkeypatch, warnings):
    def fail(*args, **kwargs):
        raise RuntimeError("board broke")

    monkeypatch.setattr(part("mme_unify", "leaderboard"), "start", fail)
    results = hooked_run(log_samples=False)
    assert "samples" not in results and "MME-U,paper" not in results["results"]["mme_unify"]
    assert len(warnings) == 1 and "mme_unify" in warnings[0]
    assert run_status.status().scored  # the run's outcome is recorded as usual


def test_no_scores_from_a_predict_only_run(hooked_run):
    results = hooked_run(log_samples=False, predict_only=True)
    assert "MME-U,paper" not in results["results"]["mme_unify"] and "samples" not in results


def test_the_run_spells_out_its_caveat_codes_once_after_its_summary_line(hooked_run, monkeypatch, capsys):
    def limited_run(results, model_name=None):
        results["config"] |= {"limit": 3}
        results["n-samples"]["mme_unify_sipu"]["original"] = 1200
        return add_paper_scores(results, model_name)

    monkeypatch.setattr(run_hooks, "add_paper_scores", limited_run)
    results = hooked_run(log_samples=False)
    assert results["results"]["mme_unify"]["caveats,paper"] == "C1"
    monkeypatch.setattr(run_hooks, "_exit_code", None)
    monkeypatch.setattr(run_hooks.seams, "report_at_exit", lambda: False)
    monkeypatch.setattr(run_hooks, "_run_locks", run_hooks.contextlib.ExitStack())
    run_hooks._at_exit()
    summary, heading, legend = capsys.readouterr().err.strip().splitlines()[-3:]
    assert summary == run_status.status().summary() and "caveats" in heading
    assert legend == "  C1 = part of the dataset (--limit 3): 3 of 1200 items in mme_unify_sipu"


@pytest.mark.slow
def test_a_cli_run_carries_the_leaderboards_paper_scores(tmp_path):
    """``lmms-eval --tasks uni_mmmu_programmatic``: the group's row in results.json (and in the printed tables)
    holds Table 2 as ``lmms-eval-unify leaderboard`` computes it from the run folder."""
    generate(tmp_path / "data", 3, seed=4)
    (tmp_path / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(tmp_path / "dreamsim")
    metrics = {"dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(tmp_path / "dreamsim"), "device": "cpu"}}
    env = offline_env(tmp_path / "data", **{METRICS_ENV: json.dumps(metrics)})
    out = tmp_path / "run"
    command = [BIN / "lmms-eval", "--model", "unify_oracle", "--tasks", "uni_mmmu_programmatic", "--output_path", out]
    done = subprocess.run([*map(str, command), "--log_samples"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    saved = json.loads(next(out.rglob("*_results.json")).read_text())
    row = saved["results"]["uni_mmmu_programmatic"]
    assert run([out, "-o", tmp_path / "board", "--benchmark", "uni_mmmu", "--bootstrap", "0", "--no-plots"]) == 0
    assert_row_matches(row, read_csv(tmp_path / "board" / "uni_mmmu_table2.csv")["unify_oracle"], "paper")
    assert row["Maze I step,paper"] == pytest.approx(100.0) and row["Geo I,paper"] is None  # not run: '-'
    assert row["n,paper"] == sum(saved["n-samples"][t]["effective"] for t in saved["group_subtasks"][row["alias"]])
    assert saved["groups"]["uni_mmmu_programmatic"] == row and "samples" not in saved
    groups_table = done.stdout.split("Groups")[-1].splitlines()
    assert any(
        "uni_mmmu_programmatic" in line and "|paper " in line and "|Maze I step" in line for line in groups_table
    )
