import datasets

from lmms_eval_unify.cli import main
from lmms_eval_unify.plugin import tasks_path


def test_tasks_path_prints_the_folder(capsys):
    assert main(["tasks-path"]) == 0
    assert capsys.readouterr().out.strip() == str(tasks_path())


def test_data_generate_writes_loadable_sets(tmp_path, capsys):
    assert main(["data", "generate", "uni_mmmu", "--out", str(tmp_path), "--n", "3"]) == 0
    maze = datasets.load_dataset("parquet", data_files=str(tmp_path / "uni_mmmu/maze/test.parquet"))["train"]
    sliding = datasets.load_dataset("parquet", data_files=str(tmp_path / "uni_mmmu/sliding/test.parquet"))[
        "train"
    ]
    assert maze.num_rows == 3 and {"initial_image", "steps"} <= set(maze.column_names)
    assert sliding.num_rows == 3 and {"initial_image", "steps_words", "final_image"} <= set(
        sliding.column_names
    )
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
