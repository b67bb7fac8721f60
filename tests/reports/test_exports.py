"""`lmms-eval-unify export`, the parts every format shares: the registry dispatch, the ``--data-dir`` note, a
sample's output and failures, and the refusal of a used folder. Each format's own round trip through the
released tools' formulas is in tests/benchmarks/<name>/test_export.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from export_runs import failed_sample_rows, write_score_run

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.reports import exports as ex
from lmms_eval_unify.reports.gallery import ModelSamples, load_runs
from lmms_eval_unify.testing.synthetic import write_run


def test_the_command_offers_every_registered_benchmark_and_each_has_an_export():
    choices = next(a.choices for a in ex.build_parser()._actions if a.dest == "benchmark")
    assert tuple(choices) == BENCHMARKS
    for benchmark in BENCHMARKS:
        module = part(benchmark, "export")
        assert isinstance(module.NEEDS_DOCS, bool), benchmark
        assert callable(module.export) and callable(module.read), benchmark


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_without_data_dir_only_formats_that_need_the_docs_say_they_are_text_only(benchmark, tmp_path, capsys):
    other = next(b for b in BENCHMARKS if b != benchmark)
    write_run(tmp_path / "runs", "m", {f"{other}_task": [{"acc": 1.0}]})
    report = ex.export([tmp_path / "runs"], benchmark, tmp_path / "out")
    text_only = [n for n in report.notes if n.startswith("no --data-dir")]
    assert bool(text_only) is part(benchmark, "export").NEEDS_DOCS and not report.files
    assert ex.export([tmp_path / "runs"], benchmark, tmp_path / "out", tmp_path / "data").notes == []
    # nothing of the benchmark under the folders: said, exit 1
    assert ex.main([str(tmp_path / "runs"), "--benchmark", benchmark, "--out", str(tmp_path / "out")]) == 1
    assert f"error: no {benchmark} samples under the given folders" in capsys.readouterr().err


def test_a_sample_output_keeps_the_model_failure_apart_from_the_judge_failure(tmp_path):
    task = f"{BENCHMARKS[0]}_task"
    write_run(tmp_path / "runs", "m", {task: failed_sample_rows(tmp_path / "runs")})
    (run,) = load_runs([tmp_path / "runs"])
    report = ex.ExportReport()
    outputs = [ex.sample_output(row, run) for row in run.samples[task]]
    for output, row in zip(outputs, run.samples[task], strict=True):
        report.count("m/task", output)
        report.count_row("m/row", row)
    assert [bool(o.failure) for o in outputs] == [False, True, True, False]
    assert [o.judge_failure for o in outputs] == ["", "", "", "judge_failed"]
    assert [o.images[0] is not None for o in outputs] == [True, False, False, True]
    assert outputs[3].text == "Answer: A"
    assert report.failures == {"m/task": 2, "m/task (judge)": 1, "m/row": 2, "m/row (judge)": 1}


def test_a_used_folder_is_refused_before_any_model_is_written(tmp_path):
    benchmark = BENCHMARKS[0]
    runs = [ModelSamples(label, {f"{benchmark}_task": []}, {}, []) for label in ("a/first", "second")]
    used = tmp_path / "second" / benchmark
    used.mkdir(parents=True)
    (used / "_done.ok").write_text("ok")
    with pytest.raises(FileExistsError, match="is not empty"):
        ex.model_folders(runs, tmp_path, benchmark)
    assert not (tmp_path / "a_first").exists()
    (used / "_done.ok").unlink()
    assert [folder for _, folder in ex.model_folders(runs, tmp_path, benchmark)] == [
        tmp_path / "a_first" / benchmark,
        used,
    ]


def test_a_sample_output_reads_images_only_from_the_runs_media_folders(tmp_path, monkeypatch):
    """The rule ``score`` follows: a record whose root is the run folder, its parent or another folder gets no
    image read, whatever file is there; a record in the run's media folder gets its image."""
    from PIL import Image

    from lmms_eval_unify.output.record import UnifiedOutput
    from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV

    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV)
    out = tmp_path / "base" / "runs"
    roots = [out / "unify_media" / "m-0123456789", out, out.parent, tmp_path / "elsewhere"]
    for root in roots:
        (root / "t").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), "red").save(root / "t" / "out.png")
    rows = [{"filtered_resps": UnifiedOutput("image_only", images=["t/out.png"], root=str(r)).to_json()} for r in roots]
    write_run(out, "m", {f"{BENCHMARKS[0]}_task": rows})
    (run,) = load_runs([out])
    images = [ex.sample_output(row, run).images[0] for row in run.samples[f"{BENCHMARKS[0]}_task"]]
    assert [image is not None for image in images] == [True, False, False, False]


def test_a_score_folder_reads_its_images_from_the_run_it_rescored(tmp_path, monkeypatch):
    """``score RUN`` writes ``RUN/scored/``, whose records name RUN's media folder: outside the score folder's own
    media folders. Exported on its own it reads them where its scoring read them, the media folders of the run it
    re-scored; a folder its results file names as extra ``media`` is not trusted (a file cannot widen the reads)."""
    from PIL import Image

    from lmms_eval_unify.output.record import UnifiedOutput
    from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV

    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV)
    task = f"{BENCHMARKS[0]}_task"
    media = tmp_path / "run" / "unify_media" / "m-0123456789"
    (media / "t").mkdir(parents=True)
    Image.new("RGB", (8, 8), "red").save(media / "t" / "out.png")
    rows = [{"filtered_resps": UnifiedOutput("image_only", images=["t/out.png"], root=str(media)).to_json()}]
    rescored = write_run(tmp_path / "run", "m", {task: rows})

    def image_read(scored: Path, model_args: str = "") -> bool:
        write_score_run(rescored, scored, {task: rows}, model_args)
        (run,) = load_runs([scored])
        return ex.sample_output(run.samples[task][0], run).images[0] is not None

    assert image_read(tmp_path / "run" / "scored")
    assert image_read(tmp_path / "elsewhere")  # score --out elsewhere
    extra_media = f"results_file={tmp_path / 'gone_results.json'},model_name=m,media={media.parent}"
    assert not image_read(tmp_path / "crafted", extra_media)
