"""Offline set generation (every benchmark's ``offline/data.py``) and ``lmms-eval-unify data generate``'s output:
each file is reported as it is written, one line per benchmark, no library progress bars."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.cli import main
from lmms_eval_unify.data.fixtures import png_cell, sample_photo


@pytest.mark.heavy  # writes a generated set
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_generate_reports_each_file_once_as_it_is_written(benchmark, tmp_path):
    heard: list[tuple[Path, bool]] = []
    paths = part(benchmark, "offline.data").generate(
        tmp_path, 1, 3, on_file=lambda path: heard.append((path, path.is_file()))
    )
    assert paths and [path for path, _ in heard] == paths
    assert all(existed for _, existed in heard), "a file was reported before it was written"
    assert len(set(paths)) == len(paths)
    assert set(tmp_path.rglob("*.parquet")) == set(paths)


class Terminal(io.StringIO):
    """stderr as a terminal, so progress bars draw."""

    def isatty(self) -> bool:
        return True


@pytest.mark.heavy  # writes every benchmark's generated set
@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_data_generate_prints_one_line_per_benchmark(tmp_path, capsys, monkeypatch, terminal):
    if terminal:
        monkeypatch.setattr("sys.stderr", Terminal())
    assert main(["data", "generate", *BENCHMARKS, "--out", str(tmp_path), "--n", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == list(BENCHMARKS)
    for benchmark, line in zip(BENCHMARKS, lines[:-1], strict=True):
        written = len(list((tmp_path / benchmark).rglob("*.parquet")))
        assert line.startswith(f"{benchmark}: {written} files, 1 items per subtask, in {tmp_path / benchmark} (")
    assert lines[-1] == f"use it with: export LMMS_EVAL_UNIFY_DATA_DIR={tmp_path}"
    bars = sys.stderr.getvalue() if terminal else capsys.readouterr().err
    assert "\n" not in bars, "a progress line was left behind"
    frames = [frame for frame in bars.split("\r") if frame.strip()]
    assert all(frame.startswith(tuple(f"{b}: " for b in BENCHMARKS)) for frame in frames), frames[:3]
    assert bool(frames) == terminal, "a bar per benchmark on a terminal, none when piped"


def test_data_generate_refuses_a_size_below_one(capsys):
    with pytest.raises(SystemExit):
        main(["data", "generate", "--out", "unused", "--n", "0"])
    assert "must be at least 1" in capsys.readouterr().err


def test_sample_photos_are_fresh_copies():
    """Photos are decoded once per process; a caller drawing on one does not change the next caller's."""
    first = sample_photo("astronaut", 32)
    pristine = np.asarray(first).copy()
    ImageDraw.Draw(first).rectangle((0, 0, 31, 31), fill="white")
    assert np.array_equal(np.asarray(sample_photo("astronaut", 32)), pristine)


def test_png_cells_are_lossless():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (17, 23, 3), dtype=np.uint8))
    decoded = Image.open(io.BytesIO(png_cell(image)["bytes"]))
    assert decoded.mode == "RGB" and np.array_equal(np.asarray(decoded), np.asarray(image))
