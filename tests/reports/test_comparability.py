"""Comparability marks (issue 24 item 2): a cell whose samples come from a --limit run, other items, another
scorer version, variant or judge than the other rows' is marked ‡ with a note saying how; --strict refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from leaderboard_runs import judged, limited, maze_rows, read_csv, run, versioned

from lmms_eval_unify.reports.comparability import differing, subset_caveat, task_caveats
from lmms_eval_unify.reports.results_io import RunInfo, TaskRun, load_results
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


def test_a_limit_run_is_marked_and_strict_refuses_it(tmp_path, capsys):
    write_run(tmp_path / "runs", "full-a", {MAZE: maze_rows(4)})
    write_run(tmp_path / "runs", "full-b", {MAZE: maze_rows(4, 0.5)})
    limited(write_run(tmp_path / "runs", "quick", {MAZE: maze_rows(2)}), MAZE, 2, 4)
    code, out = leaderboard(tmp_path)
    assert code == 0
    markdown = (out / "leaderboard.md").read_text()
    quick = next(line for line in markdown.splitlines() if line.startswith("| quick |"))
    assert "100.00‡" in quick
    assert "‡" not in next(line for line in markdown.splitlines() if line.startswith("| full-a |"))
    assert "‡ quick / Maze I step, Maze I sample, Maze T step, Maze T sample: uni_mmmu_maze: 2 of 4 items " in markdown
    assert "(--limit 2); uni_mmmu_maze: items " in markdown
    rows = read_csv(out / "uni_mmmu_table2.csv")
    assert rows["quick"]["Maze T step caveats"].startswith("uni_mmmu_maze: 2 of 4 items (--limit 2)")
    assert rows["full-a"]["Maze T step caveats"] == ""
    assert r"100.00\textsuperscript{\ddag}" in (out / "leaderboard.tex").read_text()

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
