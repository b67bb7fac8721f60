"""Shared by the export tests (tests/reports/test_exports.py, tests/benchmarks/<name>/test_export.py): the
``export`` command run as a user runs it, the local data and run media read back, and failed samples."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
from cli_runs import BIN, samples_of
from PIL import Image

from lmms_eval_unify.integration.task import DATA_DIR_ENV
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.reports.boards import Board, Options
from lmms_eval_unify.reports.exports import export
from lmms_eval_unify.testing.synthetic import write_run

MODELS = {"unify_oracle": [], "unify_random": []}
NO_RESAMPLING = Options(replicates=0)


def board_values(board: Board) -> dict[str, dict]:
    """Row label -> values of a leaderboard table."""
    return {row.label: row.values for row in board.rows}


def export_cli(runs: Path, benchmark: str, out: Path, data_dir: Path | None = None) -> str:
    """The export command's stdout + stderr; with ``data_dir`` given as ``--data-dir``."""
    extra = ["--data-dir", str(data_dir)] if data_dir else []
    done = subprocess.run(
        [
            str(BIN / "lmms-eval-unify"),
            "export",
            str(runs),
            "--benchmark",
            benchmark,
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != DATA_DIR_ENV},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def parquet_rows(data: Path, benchmark: str, subset: str) -> list[dict]:
    """The rows of one subset of the local data."""
    return pq.read_table(data / benchmark / subset / "test.parquet").to_pylist()


def run_media(run: Path, task: str) -> list[list[bytes]]:
    """Per sample (doc order), the bytes of every image the model wrote, read from the run folder itself."""
    images = []
    for row in sorted(samples_of(run, task), key=lambda r: r["doc_id"]):
        record = UnifiedOutput.from_dict(json.loads(row["filtered_resps"]))
        paths = [s.image for s in record.steps if s.image] or record.images
        images.append([(Path(record.root) / p).read_bytes() for p in paths])
    return images


def output_json(root: Path, images: list[str], text: str = "Answer: A") -> str:
    """A logged ``filtered_resps``: an answer with images under ``root``."""
    return UnifiedOutput("answer_and_image", text=text, images=images, root=str(root)).to_json()


def png() -> bytes:
    """A small valid PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def failed_sample_rows(runs: Path) -> list[dict]:
    """Four logged samples of model ``m`` under ``runs``: a good one, a missing image, a corrupt image and a
    judge failure on a good output (its media written under the run folder)."""
    media = runs / "m" / "unify_media" / "m-1"
    (media / "x").mkdir(parents=True)
    (media / "x" / "ok.png").write_bytes(png())
    (media / "x" / "corrupt.png").write_bytes(b"not a png")
    good, missing, corrupt = (output_json(media, [f"x/{n}.png"]) for n in ("ok", "gone", "corrupt"))
    return [
        {"filtered_resps": good, "target": "A", "text_correct": 1, "image_correct": 1, "details": {"predicted": "A"}},
        {"filtered_resps": missing, "target": "A", "text_correct": 1, "image_correct": 0,
         "invalid_outputs": "missing_image", "details": {"predicted": "A"}},
        {"filtered_resps": corrupt, "target": "B", "text_correct": 0, "image_correct": 0,
         "invalid_outputs": "corrupt_image", "details": {"predicted": None}},
        {"filtered_resps": good, "target": "A", "text_correct": 0, "image_correct": 0,
         "invalid_outputs": "judge_failed", "details": {"predicted": "A"}},
    ]  # fmt: skip


def write_score_run(rescored: Path, out: Path, tasks: dict[str, list[dict]], model_args: str = "") -> Path:
    """The results file ``lmms-eval-unify score`` writes under ``out`` for the run of ``rescored`` (its results
    file): the ``unify_replay`` model naming that file, and the rows (with the records, rooted in that run's
    media, that the replay served); ``model_args`` replaces the replay's arguments."""
    results_file = write_run(out, "m", tasks, date_id="20260301T000000")
    results = json.loads(results_file.read_text())
    arguments = model_args or f"results_file={rescored},model_name=m"
    results["config"] = {"model": "unify_replay", "model_args": arguments}
    results_file.write_text(json.dumps(results))
    return results_file


def export_model_run(tmp_path: Path, benchmark: str, tasks: dict[str, list[dict]], data: Path | None) -> Path:
    """Write the rows as model ``m``'s run under ``tmp_path/runs`` (with the task configs the local data needs:
    dataset name, split, benchmark), export it to ``tmp_path/out``; returns ``out/m/<benchmark>``."""
    results_file = write_run(tmp_path / "runs", "m", tasks)
    results = json.loads(results_file.read_text())
    results["configs"] = {
        task: {"dataset_name": task.split("_")[2], "test_split": "test", "metadata": {"benchmark": benchmark}}
        for task in tasks
    }
    results_file.write_text(json.dumps(results))
    export([tmp_path / "runs"], benchmark, tmp_path / "out", data)
    return tmp_path / "out" / "m" / benchmark
