import json
from pathlib import Path

import datasets
import pytest

from lmms_eval_unify.benchmarks.uni_mmmu import demo
from lmms_eval_unify.benchmarks.uni_mmmu.demo import OUTSIDE_BAND, DemoRow
from lmms_eval_unify.cli import main
from lmms_eval_unify.puzzles.scoring import METRICS
from lmms_eval_unify.run.paths import tasks_path


def test_tasks_path_prints_the_folder(capsys):
    assert main(["tasks-path"]) == 0
    assert capsys.readouterr().out.strip() == str(tasks_path())


def test_data_generate_writes_loadable_sets(tmp_path, capsys):
    assert main(["data", "generate", "uni_mmmu", "--out", str(tmp_path), "--n", "3"]) == 0
    maze = datasets.load_dataset("parquet", data_files=str(tmp_path / "uni_mmmu/maze/test.parquet"))["train"]
    sliding = datasets.load_dataset("parquet", data_files=str(tmp_path / "uni_mmmu/sliding/test.parquet"))["train"]
    assert maze.num_rows == 3 and {"initial_image", "steps"} <= set(maze.column_names)
    assert sliding.num_rows == 3 and {"initial_image", "steps_words", "final_image"} <= set(sliding.column_names)
    assert "LMMS_EVAL_UNIFY_DATA_DIR" in capsys.readouterr().out


def test_generation_is_deterministic(tmp_path):
    main(["data", "generate", "--out", str(tmp_path / "a"), "--n", "2", "--seed", "4"])
    main(["data", "generate", "--out", str(tmp_path / "b"), "--n", "2", "--seed", "4"])
    for name in ("maze", "sliding"):
        a = datasets.Dataset.from_parquet(str(tmp_path / f"a/uni_mmmu/{name}/test.parquet"))
        b = datasets.Dataset.from_parquet(str(tmp_path / f"b/uni_mmmu/{name}/test.parquet"))
        assert a.to_dict() == b.to_dict()


def test_tasks_lists_ours(capsys):
    assert main(["tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "uni_mmmu\tgroup" in lines and "uni_mmmu_maze\ttask" in lines


def test_unknown_benchmark_is_a_clear_error():
    import pytest

    with pytest.raises(SystemExit, match="unknown benchmark"):
        main(["data", "generate", "nope", "--out", "/tmp/x"])


@pytest.mark.slow
def test_demo_averages_the_random_player_over_seeds_and_prints_its_band(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--n", "4", "--random-seeds", "2"]) == 0
    table = {}
    for line in capsys.readouterr().out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1].startswith("uni_mmmu_"):
            table[(cells[0], cells[1])] = cells[2:6]
    assert sorted({model for model, _ in table}) == [
        "random (analytic)",
        "random 95% band of that mean",
        "unify_oracle",
        "unify_random (mean of seeds 0–1)",
    ]
    for task in ("uni_mmmu_maze", "uni_mmmu_sliding"):
        assert table[("unify_oracle", task)] == ["100.0"] * 4
        analytic = table[("random (analytic)", task)]
        bands = [tuple(map(float, v.split("–"))) for v in table[("random 95% band of that mean", task)]]
        for mean, (low, high) in zip(analytic, bands, strict=True):  # the printed mean is marked iff outside
            assert (low <= float(mean.rstrip(OUTSIDE_BAND)) <= high) != mean.endswith(OUTSIDE_BAND)
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert runs == ["unify_oracle", "unify_random-seed0", "unify_random-seed1"]
    results = json.loads(next((tmp_path / "runs" / "unify_oracle").rglob("*_results.json")).read_text())
    sources = {task: record["kind"] for task, record in results["lmms_eval_unify"]["data"].items()}
    assert sources == {"uni_mmmu_maze": "generated", "uni_mmmu_sliding": "generated"}  # never taken for the paper's


@pytest.mark.parametrize("seeds", ["0", "-1"])
def test_demo_needs_at_least_one_random_seed(seeds, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--random-seeds", seeds])
    assert exit_info.value.code == 2
    assert "--random-seeds: must be at least 1" in capsys.readouterr().err


def test_demo_table_marks_a_random_mean_outside_its_band():
    """One seed on few items: the band of sample accuracy collapses to 0.0-0.0 while the analytic mean is not 0."""
    band = dict(zip(METRICS, [(0.0, 0.0), (0.05, 0.3), (0.0, 0.0), (0.05, 0.3)], strict=True))
    rows = [
        DemoRow("unify_oracle", "uni_mmmu_sliding", [1.0] * 4, 0, 3.0),
        DemoRow("unify_random", "uni_mmmu_sliding", [0.0, 0.4, 0.0, 0.1], 0, 3.0, random_mean=True),
        DemoRow("random (analytic)", "uni_mmmu_sliding", [0.004, 0.17, 0.004, 0.17], random_mean=True),
        DemoRow("random 95% band of that mean", "uni_mmmu_sliding", list(band.values())),
    ]
    lines = demo.table(rows, {"uni_mmmu_sliding": band}, 1, Path("out"))
    printed = {line.split(" | ")[0]: line.split(" | ")[2:6] for line in lines if line.startswith("| ")}
    assert printed["| unify_oracle"] == ["100.0"] * 4  # not a random-player mean: never marked
    assert printed["| unify_random"] == ["0.0", f"40.0{OUTSIDE_BAND}", "0.0", "10.0"]
    assert printed["| random (analytic)"] == [f"0.4{OUTSIDE_BAND}", "17.0", f"0.4{OUTSIDE_BAND}", "17.0"]
    assert printed["| random 95% band of that mean"] == ["0.0–0.0", "5.0–30.0", "0.0–0.0", "5.0–30.0"]
    assert any(line.startswith(f"{OUTSIDE_BAND} = a random-player mean outside the band") for line in lines)
    unmarked = demo.table(rows[:1] + rows[3:], {"uni_mmmu_sliding": band}, 1, Path("out"))
    assert not any(OUTSIDE_BAND in line for line in unmarked)
