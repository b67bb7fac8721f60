"""K shards of one run (``--offset``/``--limit`` jobs of one configuration) read as one run (issue 26 item 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env
from leaderboard_runs import read_csv, run, unified_model_tasks, write_shards

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.reports.comparability import subset_caveat
from lmms_eval_unify.reports.render import MISSING
from lmms_eval_unify.reports.results_io import ShardError, load_results
from lmms_eval_unify.testing.synthetic import write_run


def all_tasks() -> dict[str, list[dict]]:
    """The unified model's samples of every benchmark, each row given its doc id."""
    tasks = {t: rows for b in BENCHMARKS for t, rows in unified_model_tasks()[b].items()}
    return {t: [{**row, "doc_id": i, "input": f"{t} {i}"} for i, row in enumerate(rows)] for t, rows in tasks.items()}


def board_files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.glob("*.csv"))}


MAZE = "uni_mmmu_maze"


@pytest.mark.subprocess  # the Gap Score fit runs in a child process
def test_three_shards_give_exactly_the_tables_of_one_run(tmp_path):
    tasks = all_tasks()
    write_run(tmp_path / "whole", "uni-model", tasks)
    write_shards(tmp_path / "sharded", tasks, [(0, 1), (1, 3), (3, 100)])
    options = ["--no-plots", "--bootstrap", 200, "--seed", 3, "--gap-variant", "stable"]  # official Gaps carry ‡
    assert run([tmp_path / "whole", "-o", tmp_path / "one", *options]) == 0
    assert run([tmp_path / "sharded", "-o", tmp_path / "three", *options]) == 0
    one, three = board_files(tmp_path / "one"), board_files(tmp_path / "three")
    assert one == three and "gapeval_table2.csv" in one  # Gap Score (set-level fit) and intervals included
    assert "‡" not in (tmp_path / "three" / "leaderboard.md").read_text()
    manifest = json.loads((tmp_path / "three" / "manifest.json").read_text())
    maze = manifest["rows"]["uni-model"]["tasks"]["uni_mmmu_maze"]
    one_maze = json.loads((tmp_path / "one" / "manifest.json").read_text())["rows"]["uni-model"]["tasks"][
        "uni_mmmu_maze"
    ]
    assert len(maze["results_files"]) == 1  # one item: only the first shard has it
    sipu = manifest["rows"]["uni-model"]["tasks"]["mme_unify_sipu"]
    assert len(sipu["results_files"]) == 3 and (sipu["limit"], sipu["offset"]) == (None, 0)
    assert maze["items"] == one_maze["items"]


def test_missing_items_are_kept_named_and_left_to_their_task(tmp_path, capsys):
    tasks = {"mme_unify_sipu": [{"acc": 1, "doc_id": i} for i in range(10)]}
    write_shards(tmp_path, tasks, [(0, 3), (5, 8), (9, 10)])
    (model,) = load_results([tmp_path]).values()
    sipu = model.runs["mme_unify_sipu"]
    assert sipu.missing == (3, 4, 8) and len(sipu.files) == 3 and len(model.samples["mme_unify_sipu"]) == 7
    assert re.search(
        r"mme_unify_sipu of uni-model@\w+: the 3 shards .* miss items 3-4, 8 of 10", capsys.readouterr().err
    )
    assert subset_caveat("mme_unify_sipu", sipu) == "mme_unify_sipu: shards miss items 3-4, 8 of 10; cells left blank"


@pytest.mark.subprocess  # the Gap Score fit runs in a child process
def test_a_shard_gap_blanks_and_marks_its_task_only_and_strict_still_refuses(tmp_path, capsys):
    """Issue 33 item 7: a task of 8 items run as shards that miss items 4-5 stopped every benchmark's board
    (exit 2). Now the other boards are those of a run without the task, its cells are blank and marked with the
    doc ids, and ``--strict`` refuses them."""
    write_run(tmp_path / "whole", "uni-model", {t: rows for t, rows in all_tasks().items() if t != MAZE})
    maze = [{"text_step_acc": 1.0, "doc_id": i, "input": f"maze {i}"} for i in range(8)]
    write_shards(tmp_path / "sharded", {MAZE: maze}, [(0, 4), (6, 8)])
    options = ["--no-plots", "--bootstrap", 0, "--gap-variant", "stable"]
    assert run([tmp_path / "whole", "-o", tmp_path / "without", *options]) == 0
    capsys.readouterr()
    assert run([tmp_path / "whole", tmp_path / "sharded", "-o", tmp_path / "gap", *options]) == 0
    assert "miss items 4-5 of 8" in capsys.readouterr().err
    without, gap = board_files(tmp_path / "without"), board_files(tmp_path / "gap")
    assert {k: v for k, v in gap.items() if not k.startswith("uni_mmmu")} == without and "gapeval_table2.csv" in gap
    row = read_csv(tmp_path / "gap" / "uni_mmmu_table2.csv")["uni-model"]
    assert row["Maze T step"] == MISSING
    assert row["Maze T step caveats"] == "uni_mmmu_maze: shards miss items 4-5 of 8; cells left blank"
    assert "‡" in (tmp_path / "gap" / "leaderboard.md").read_text()
    manifest = json.loads((tmp_path / "gap" / "manifest.json").read_text())
    assert manifest["rows"]["uni-model"]["tasks"][MAZE]["missing_doc_ids"] == [4, 5]

    assert run([tmp_path / "whole", tmp_path / "sharded", "-o", tmp_path / "strict", "--strict", *options]) == 3
    assert "uni_mmmu_maze: shards miss items 4-5 of 8" in capsys.readouterr().err


def test_items_in_two_shards_are_an_error_naming_them(tmp_path, capsys):
    tasks = {"mme_unify_sipu": [{"acc": 1, "doc_id": i} for i in range(10)]}
    write_shards(tmp_path, tasks, [(0, 6), (4, 10)])
    with pytest.raises(ShardError, match=r"items 4-5 are in two runs that each have items of their own"):
        load_results([tmp_path])
    assert run([tmp_path, "--no-plots", "-o", tmp_path / "b"]) == 2
    assert "items 4-5 are in two runs" in capsys.readouterr().err


def test_a_rerun_of_some_items_still_replaces_them(tmp_path, capsys):
    """Not shards: a later run whose items are all in the earlier one (or the reverse) replaces it."""
    tasks = {"mme_unify_sipu": [{"acc": 1, "doc_id": i} for i in range(4)]}
    write_run(tmp_path / "a", "uni-model", tasks, "20260101T0")
    write_run(tmp_path / "b", "uni-model", {"mme_unify_sipu": tasks["mme_unify_sipu"][:2]}, "20260102T0")
    (model,) = load_results([tmp_path], warn=sys.stderr).values()
    assert len(model.samples["mme_unify_sipu"]) == 2
    assert "keeping the newer" in capsys.readouterr().err


@pytest.mark.slow
def test_shards_of_the_real_cli_merge_into_the_single_run(tmp_path):
    """``lmms-eval --offset/--limit`` jobs of the oracle on generated maze data: their doc ids are the dataset's,
    and the three shards' board equals the single run's."""
    data = tmp_path / "data"
    env = offline_env(data)
    generate = [str(BIN / "lmms-eval-unify"), "data", "generate", "uni_mmmu", "--out", str(data), "--n", "5"]
    subprocess.run(generate, env=env, check=True, capture_output=True)
    base = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze", "--log_samples"]
    jobs = {"whole": [], "s0": ["--limit", "2"], "s1": ["--offset", "2", "--limit", "2"], "s2": ["--offset", "4"]}
    for name, flags in jobs.items():
        done = subprocess.run([*base, "--output_path", str(tmp_path / name), *flags], env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    options = ["--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 100]
    assert run([tmp_path / "whole", "-o", tmp_path / "one", *options]) == 0
    assert run([tmp_path / "s0", tmp_path / "s1", tmp_path / "s2", "-o", tmp_path / "three", *options]) == 0
    assert board_files(tmp_path / "one") == board_files(tmp_path / "three")
    assert run([tmp_path / "s0", tmp_path / "s2", "-o", tmp_path / "gap", "--strict", *options]) == 3  # items 2-3


def test_one_shard_on_generated_data_makes_the_merged_task_so(tmp_path):
    tasks = {"mme_unify_sipu": [{"acc": 1, "doc_id": i} for i in range(4)]}
    write_shards(tmp_path, tasks, [(0, 2), (2, 4)])
    sources = [{"kind": "hub", "repo": "r", "name": "", "revision": ""}, {"kind": "generated", "seed": 0, "n": 2}]
    for path, source in zip(sorted(tmp_path.rglob("*_results.json")), sources, strict=True):
        results = json.loads(path.read_text())
        results["lmms_eval_unify"] = {"data": {"mme_unify_sipu": source}}
        path.write_text(json.dumps(results))
    (model,) = load_results([tmp_path]).values()
    assert model.runs["mme_unify_sipu"].source == sources[1]
