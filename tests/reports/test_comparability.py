"""Comparability marks (issue 24 item 2): a cell whose samples come from a --limit run, other items, another
scorer version, variant or judge than the other rows' is marked ‡ with a note saying how; --strict refuses."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from leaderboard_runs import edit_results, judged, limited, maze_rows, read_csv, run, versioned

from lmms_eval_unify.reports.comparability import (
    TINY_METRICS,
    Caveat,
    differing,
    subjects_text,
    subset_caveat,
    task_caveats,
)
from lmms_eval_unify.reports.results_io import RunInfo, TaskRun, load_results
from lmms_eval_unify.run.provenance import PROVENANCE_KEY
from lmms_eval_unify.testing.synthetic import write_run

MAZE = "uni_mmmu_maze"
GEOMETRY = "uni_mmmu_geometry"


def leaderboard(tmp_path: Path, *extra) -> tuple[int, Path]:
    out = tmp_path / "board"
    code = run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 0, "-o", out, *extra])
    return code, out


def test_most_rows_share_the_reference_and_a_tie_marks_every_differing_row():
    assert differing({"a": 1, "b": 1, "c": 2}) == {"c": 1}
    assert differing({"a": 1, "b": 2}) == {"a": None, "b": None}
    assert differing({"a": 1, "b": 1}) == {}
    assert differing({"a": 1, "b": 1, "c": 2, "d": 2, "e": 3}) == {
        "a": None,
        "b": None,
        "c": None,
        "d": None,
        "e": None,
    }


def test_a_subset_caveat_names_the_flags_and_the_dataset_size():
    run_info = RunInfo(Path("r.json"))
    assert subset_caveat("t", TaskRun(run_info, n=3, n_dataset=200, limit=3.0)) == "t: 3 of 200 items (--limit 3)"
    assert subset_caveat("t", TaskRun(run_info, n=5, n_dataset=200, offset=10)) == "t: 5 of 200 items (--offset 10)"
    assert subset_caveat("t", TaskRun(run_info, n=200, n_dataset=200)) is None
    assert subset_caveat("t", TaskRun(run_info, n=200, n_dataset=200, limit=500.0)) is None  # a limit above the set


def test_a_caveat_is_its_text_and_knows_its_reason_task_and_detail():
    caveat = subset_caveat("t", TaskRun(RunInfo(Path("r.json")), n=3, n_dataset=200, limit=3.0))
    assert (caveat.reason, caveat.subject, caveat.detail) == ("part of the dataset (--limit 3)", "t", "3 of 200 items")
    assert copy.deepcopy(caveat).reason == caveat.reason and Caveat.of(caveat) is caveat
    assert Caveat.of("fit").reason == "fit" and Caveat.of("fit") == "fit"
    caveats = [
        caveat,
        Caveat("u", caveat.reason, "u", "3 of 200 items"),
        Caveat("v", caveat.reason, "v", "3 of 9 items"),
    ]
    assert subjects_text(caveats) == "3 of 200 items in t, u; 3 of 9 items in v"
    assert subjects_text([Caveat("t: x", "x", "t"), Caveat("u: x", "x", "u")]) == "t, u"


def test_tiny_metrics_mark_only_the_tasks_whose_scorer_loads_a_metric_backbone(tmp_path):
    tasks = {
        MAZE: maze_rows(2),
        "uni_mmmu_jigsaw": [{"img_score": 0.5, "text_acc": 1.0}],
        "mme_unify_sipu": [{"acc": 1.0}],
        "mme_unify_fir": [{"lpips": 0.3}],
    }
    edit_results(write_run(tmp_path / "runs", "trial", tasks), **{PROVENANCE_KEY: {"tiny_metrics": True}})
    caveats = task_caveats(load_results([tmp_path / "runs"]))
    tiny = {task for (_, task), found in caveats.items() for caveat in found if caveat.reason == TINY_METRICS}
    assert tiny == {"uni_mmmu_jigsaw", "mme_unify_fir"}


def test_a_limit_run_is_marked_and_strict_refuses_it(tmp_path, capsys):
    write_run(tmp_path / "runs", "full-a", {MAZE: maze_rows(4)})
    write_run(tmp_path / "runs", "full-b", {MAZE: maze_rows(4, 0.5)})
    limited(write_run(tmp_path / "runs", "quick", {MAZE: maze_rows(2)}), MAZE, 2, 4)
    code, out = leaderboard(tmp_path)
    assert code == 0
    markdown = (out / "leaderboard.md").read_text()
    quick = next(line for line in markdown.splitlines() if line.startswith("| quick‡ |"))  # every value marked
    assert "100.00" in quick and "100.00‡" not in quick  # one mark on the label, not one per value
    assert "‡" not in next(line for line in markdown.splitlines() if line.startswith("| full-a |"))
    assert "_‡ quick: part of the dataset (--limit 2)._" in markdown
    assert "_‡ quick: other items than most rows._" in markdown
    rows = read_csv(out / "uni_mmmu_table2.csv")
    assert rows["quick"]["Maze T step caveats"].startswith("uni_mmmu_maze: 2 of 4 items (--limit 2)")
    assert rows["full-a"]["Maze T step caveats"] == ""
    assert r"quick$^\ddagger$ & " in (out / "leaderboard.tex").read_text()

    capsys.readouterr()
    strict = tmp_path / "strict"
    code = run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--strict", "-o", strict])
    assert code == 3 and not strict.exists()
    err = capsys.readouterr().err
    assert (
        "error: not comparable: uni_mmmu_table2 / quick / Maze T step: " in err
        and "2 of 4 items (--limit 2)" in err
        and "nothing written" in err
    )


def test_strict_passes_rows_that_agree(tmp_path):
    write_run(tmp_path / "runs", "a", {MAZE: maze_rows(4)})
    write_run(tmp_path / "runs", "b", {MAZE: maze_rows(4, 0.0)})
    code, out = leaderboard(tmp_path, "--strict")
    assert code == 0
    assert "‡" not in (out / "leaderboard.md").read_text()


def test_other_items_scorer_version_variant_and_judge_are_each_marked(tmp_path):
    for name in ("a", "b", "c"):
        rows = maze_rows(4)
        if name == "c":
            rows[3]["target"] = "another path"  # another release of the data
        path = write_run(
            tmp_path / "runs", name, {MAZE: rows, GEOMETRY: [judged("Qwen-72B" if name != "b" else "gpt-x")]}
        )
        versioned(path, MAZE, "2.0" if name != "a" else "1.0")
    code, out = leaderboard(tmp_path)
    assert code == 0
    caveats = task_caveats(load_results([tmp_path / "runs"]))
    by_row = {config.partition("@")[0]: reasons for (config, _), reasons in caveats.items()}
    assert by_row["a"] == ("uni_mmmu_maze: scorer version 1.0 (most rows: 2.0)",)
    assert by_row["b"] == ("uni_mmmu_geometry: judges gpt-x (uni_mmmu_geometry_image v1) "
                           "(most rows: Qwen-72B (uni_mmmu_geometry_image v1))",)  # fmt: skip
    assert by_row["c"][0].startswith("uni_mmmu_maze: items ") and "(most rows: " in by_row["c"][0]
    rows = read_csv(out / "uni_mmmu_table2.csv")
    assert "judges gpt-x" in rows["b"]["Geo I caveats"] and rows["b"]["Maze T step caveats"] == ""
    assert rows["a"]["Geo I caveats"] == "" and "scorer version 1.0" in rows["a"]["Maze T step caveats"]


def test_an_edited_judge_template_under_the_same_id_and_version_is_marked(tmp_path):
    """The judge model, template id and version agree; only the template text (its digest) differs."""
    for name, digest in (("a", "0123456789ab"), ("b", "0123456789ab"), ("c", "fedcba987654")):
        write_run(tmp_path / "runs", name, {GEOMETRY: [judged("Qwen-72B", digest=digest)]})
    caveats = task_caveats(load_results([tmp_path / "runs"]))
    assert [reasons for (config, _), reasons in caveats.items()] == [
        (
            "uni_mmmu_geometry: judges Qwen-72B (uni_mmmu_geometry_image v1 #fedcba987654) "
            "(most rows: Qwen-72B (uni_mmmu_geometry_image v1 #0123456789ab))",
        )
    ]
    manifest = json.loads((leaderboard(tmp_path)[1] / "manifest.json").read_text())
    judges = {row["tasks"][GEOMETRY]["judges"][0] for row in manifest["rows"].values()}
    assert judges == {f"Qwen-72B (uni_mmmu_geometry_image v1 #{d})" for d in ("0123456789ab", "fedcba987654")}


@pytest.mark.parametrize("variant", ["official", "corrected"])
def test_a_variant_that_differs_is_marked(tmp_path, variant):
    for name in ("a", "b", "c"):
        versioned(
            write_run(tmp_path / "runs", name, {MAZE: maze_rows(4)}), MAZE, "2.0", variant if name == "c" else "x"
        )
    caveats = task_caveats(load_results([tmp_path / "runs"]))
    assert [reasons for (config, _), reasons in caveats.items()] == [
        (f"uni_mmmu_maze: variant {variant} (most rows: x)",)
    ]


def with_data_source(path: Path, task: str, source: dict) -> Path:
    """Record in a written run that `task` read `source` (as ``provenance.run_provenance`` stamps it)."""
    results = json.loads(path.read_text())
    results["lmms_eval_unify"] = {"version": "0.1.0", "commit": "", "data": {task: source}}
    path.write_text(json.dumps(results))
    return path


HUB_MAZE = {"kind": "hub", "repo": "lmms-lab-eval/UniMMMU", "name": "maze", "revision": "", "fingerprint": "a1"}


def test_generated_or_unknown_data_is_marked_strict_refuses_it_and_the_manifest_names_the_source(tmp_path, capsys):
    """Issue 33 item 1: a run on ``data generate`` output made a clean table whose manifest named the Hub repo."""
    generated = {"kind": "generated", "seed": 0, "n": 5, "file": "uni_mmmu/maze/test.parquet", "fingerprint": "b2"}
    unknown = {"kind": "unknown", "file": "uni_mmmu/maze/test.parquet", "why": "no data_source.json"}
    for name, source in (("hub-a", HUB_MAZE), ("hub-b", HUB_MAZE), ("gen", generated), ("local", unknown)):
        with_data_source(write_run(tmp_path / "runs", name, {MAZE: maze_rows(4)}), MAZE, source)
    caveats = task_caveats(load_results([tmp_path / "runs"]))
    by_row = {config.partition("@")[0]: reasons for (config, _), reasons in caveats.items()}
    assert sorted(by_row) == ["gen", "local"]
    assert by_row["gen"] == (
        "uni_mmmu_maze: generated data (lmms-eval-unify data generate), not the published dataset "
        "(seed 0, 5 items per subtask)",
    )
    assert by_row["local"][0].startswith("uni_mmmu_maze: local data of unknown origin")
    assert by_row["local"][0].endswith("(uni_mmmu/maze/test.parquet)")

    code, out = leaderboard(tmp_path)
    assert code == 0
    rows = read_csv(out / "uni_mmmu_table2.csv")
    assert "generated data" in rows["gen"]["Maze T step caveats"] and rows["hub-a"]["Maze T step caveats"] == ""
    manifest = json.loads((out / "manifest.json").read_text())
    tasks = {label: row["tasks"][MAZE] for label, row in manifest["rows"].items()}
    assert tasks["hub-a"]["dataset"] == HUB_MAZE and tasks["gen"]["dataset"] == generated
    assert tasks["hub-a"]["dataset_config"] == {}  # write_run records no task config

    capsys.readouterr()
    code = run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--strict", "-o", tmp_path / "strict"])
    err = capsys.readouterr().err
    assert code == 3 and "gen / Maze T step: uni_mmmu_maze: generated data" in err and "unknown origin" in err


def test_a_run_that_recorded_no_data_source_is_listed_as_such(tmp_path):
    write_run(tmp_path / "runs", "old", {MAZE: maze_rows(4)})
    code, out = leaderboard(tmp_path, "--strict")
    manifest = json.loads((out / "manifest.json").read_text())
    assert code == 0 and manifest["rows"]["old"]["tasks"][MAZE]["dataset"] == {"kind": "not recorded"}
