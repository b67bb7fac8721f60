"""Local data read through the gate (integration/data_rows.py): a row naming a file outside the data folder fails
only its own sample, as the data's fault; a file of the wrong schema is a preflight problem naming it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runs import BIN, offline_env, samples_of
from lmms_eval import utils
from PIL import Image

from lmms_eval_unify.integration.data_rows import DATA_ERROR_KEY, checked_data_file, smoke_problem
from lmms_eval_unify.puzzles.dataset import write_puzzles

TASKS = Path(__file__).parents[2] / "tasks"


def _maze_config() -> dict:
    return utils.load_yaml_config(str(TASKS / "uni_mmmu" / "uni_mmmu_maze.yaml"))


def _name_files(parquet: Path, column: str, paths: dict[int, str]) -> None:
    """Make rows of ``parquet`` name files (``{"bytes": None, "path": ...}``) instead of holding their image."""
    table = pq.read_table(parquet)
    cells = table.column(column).to_pylist()
    for row, path in paths.items():
        cells[row] = {"bytes": None, "path": path}
    kind = table.schema.field(column).type
    table = table.set_column(table.column_names.index(column), column, pa.array(cells, kind))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(parquet).metadata), parquet)


@pytest.fixture
def data(tmp_path) -> Path:
    write_puzzles(tmp_path / "data" / "uni_mmmu", 4, 1, seed=0)
    return tmp_path / "data"


def test_rows_naming_files_outside_the_data_folder_are_emptied_and_marked(data, tmp_path):
    maze = data / "uni_mmmu" / "maze" / "test.parquet"
    Image.new("RGB", (8, 8)).save(tmp_path / "outside.png")
    Image.new("RGB", (8, 8)).save(data / "inside.png")
    os.mkfifo(data / "pipe.png")
    _name_files(maze, "initial_image", {0: str(data / "inside.png"), 1: str(tmp_path / "outside.png"),
                                        2: "/etc/passwd", 3: str(data / "pipe.png")})  # fmt: skip
    loaded, refused = checked_data_file(maze, data)
    assert loaded != maze and sorted(refused) == [1, 2, 3]
    assert "outside_roots" in refused[1] and "outside_roots" in refused[2] and "not_regular_file" in refused[3]
    assert all(f"{maze} row {row}" in reason for row, reason in refused.items())
    rows = datasets.load_dataset("parquet", data_files=str(loaded), split="train")
    assert rows[0]["initial_image"].size == (8, 8) and rows[0][DATA_ERROR_KEY] == ""
    assert all(rows[i]["initial_image"] is None and rows[i][DATA_ERROR_KEY] for i in (1, 2, 3))
    clean = data / "uni_mmmu" / "sliding" / "test.parquet"
    assert checked_data_file(clean, data) == (clean, {})  # nothing refused: the file is loaded as it is


def test_the_preflight_schema_check_runs_the_tasks_own_doc_functions(data):
    maze = data / "uni_mmmu" / "maze" / "test.parquet"
    assert smoke_problem(_maze_config(), maze, data) is None
    wrong = data / "wrong.parquet"
    pq.write_table(pq.read_table(maze).rename_columns(["id", "image", "moves"]), wrong)
    problem = smoke_problem(_maze_config(), wrong, data)
    assert str(wrong) in problem and "KeyError" in problem and "uni_mmmu_maze" in problem
    (data / "not.parquet").write_text("not parquet")
    assert "not a readable parquet file" in smoke_problem(_maze_config(), data / "not.parquet", data)
    os.mkfifo(data / "fifo.parquet")
    assert "not_regular_file" in smoke_problem(_maze_config(), data / "fifo.parquet", data)


@pytest.mark.slow
def test_a_broken_data_file_costs_only_its_task_and_a_bad_row_only_its_sample(data, tmp_path):
    """Through the real CLI: the preflight names a parquet of the wrong schema (it failed the whole run with a
    TypeError); with it fixed, rows naming /etc/passwd or a file outside the data folder are ``data_error``
    samples (not ``model_error``) and every other sample is scored."""
    env = offline_env(data)
    sliding = data / "uni_mmmu" / "sliding" / "test.parquet"
    good = sliding.read_bytes()
    pq.write_table(pa.table({"id": ["x"], "steps": [json.dumps({"wrong": 1})]}), sliding)
    command = [str(BIN / "lmms-eval"), "--model", "unify_random", "--tasks", "uni_mmmu_maze,uni_mmmu_sliding",
               "--output_path", str(tmp_path / "run"), "--log_samples"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and f"{sliding} does not have the columns uni_mmmu_sliding reads" in done.stderr
    sliding.write_bytes(good)
    Image.new("RGB", (8, 8)).save(tmp_path / "outside.png")
    _name_files(data / "uni_mmmu" / "maze" / "test.parquet", "initial_image",
                {1: str(tmp_path / "outside.png"), 2: "/etc/passwd"})  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    reasons = {row["doc_id"]: row["invalid_outputs"] for row in samples_of(tmp_path / "run", "uni_mmmu_maze")}
    assert reasons[1] == reasons[2] == "data_error" and reasons[0] != "data_error" and reasons[3] != "data_error"
    assert all(row["invalid_outputs"] != "data_error" for row in samples_of(tmp_path / "run", "uni_mmmu_sliding"))


def test_a_bare_video_name_is_checked_as_a_path_and_never_read_from_the_working_folder(data, tmp_path, monkeypatch):
    """A video cell holding ``clip.mp4`` would be opened relative to the working folder (outside the data): it is
    refused as the data's fault (``data_error``), where it used to reach the model and fail as its own."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clip.mp4").write_bytes(b"not opened")
    table = pa.table({"video": ["clip.mp4", "videos/missing.mp4"], "image_name": ["sport-0-x.png", "a.png"]})
    parquet = data / "videos.parquet"
    pq.write_table(table, parquet)
    _, refused = checked_data_file(parquet, data)
    assert sorted(refused) == [0, 1] and "outside_roots" in refused[0] and "image_name" not in refused[0]
