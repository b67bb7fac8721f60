"""`lmms-eval-unify export`: write our runs in each benchmark's own exchange format (docs/scoring.md).

So a maintainer can feed our samples to the released tools. This module is the command and what every
format shares: reading a logged sample's output through the scorers' checked image reader, writing files,
the docs of the local data, and the report of what was written and which samples failed. The formats
themselves live with their benchmarks: ``lmms_eval_unify/benchmarks/<name>/export.py``, reached through the
registry, implements :class:`BenchmarkExport`: a writer, and a reader of its export (the round trip the
tests check).

With the local data (``--data-dir``), benchmarks whose released image metrics need the docs get the docs'
fields, released names and reference files (lmms-eval does not log docs). A failed sample (no output,
missing or unreadable image, model error, judge failure) is written the way the released tool expects a
failure and counted in the report.

Every file goes through the write gate (``lmms_eval_unify.writes``), confined to ``--out``, under the folder's
writer lock: a symlink planted there is refused, never written through; a refused file makes the export
incomplete (named, exit 2), the others are still written.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.output.media_reader import DECODE_ERRORS, read_image_file
from lmms_eval_unify.output.record import UnifiedOutput, parse_output
from lmms_eval_unify.reports.comparability import subset_caveat
from lmms_eval_unify.reports.gallery import ModelSamples, doc_row, judge_failure, load_runs, media_roots, resolve_image
from lmms_eval_unify.run.paths import DATA_DIR_ENV
from lmms_eval_unify.scoring.samples import sample_unsupported
from lmms_eval_unify.writes import (
    EXIT_REFUSED,
    FolderBusy,
    WriteRefused,
    folder_lock,
    make_folder,
    write_or_record,
)


@dataclass
class ExportReport:
    """What an export wrote: files, failed samples per ``model/task``, notes on what was left out, and the files
    the write gate refused; every file is confined to ``root`` (the ``--out`` folder; None: each file's own
    folder)."""

    files: list[Path] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    root: Path | None = None
    refused: list[WriteRefused] = field(default_factory=list)

    def write(self, path: Path, data: str | bytes, listed: bool = True) -> bool:
        """Write ``data`` (text as UTF-8) to ``path`` through the write gate; in ``files`` when written (and
        ``listed``), in ``refused`` when the gate refused it."""
        written = write_or_record(path, data, self.root or path.parent, self.refused)
        if written and listed:
            self.files.append(path)
        return written

    def folder(self, path: Path) -> Path:
        """Make the folder ``path`` through the write gate (a refusal is recorded in ``refused``); ``path``."""
        try:
            make_folder(path, self.root or path)
        except WriteRefused as refusal:
            self.refused.append(refusal)
        return path

    def fail(self, key: str) -> None:
        """Count one failed sample under ``key``."""
        self.failures[key] = self.failures.get(key, 0) + 1

    def count(self, key: str, output: SampleOutput) -> None:
        """Count a sample's model-side failure and, separately (``<key> (judge)``), its judge failure."""
        if output.failure:
            self.fail(key)
        if output.judge_failure:
            self.fail(f"{key} (judge)")

    def count_row(self, key: str, row: Mapping) -> None:
        """Like :meth:`count` from a logged row's ``invalid_outputs`` alone (exports that copy no media)."""
        if row.get("invalid_outputs"):
            self.fail(f"{key} (judge)" if judge_failure(row) else key)


NO_FILE, MISSING, UNREADABLE = "no file", "missing", "unreadable"
"""Why a file of a record was not read: the record names none; it is not in the run's media folders (or the path
leaves them); it is there but does not pass the scorers' checked reader (not an image, truncated, too large)."""
UNSUPPORTED = "unsupported"
"""The ``record_failure`` of a sample the model cannot answer (its metrics are None: left out of the means)."""


@dataclass
class SampleOutput:
    """One sample's model output: text, the resolved generated images (None = missing/unreadable), steps, the
    model-side failure reason ('' when the output is usable) and a judge failure ('' when none): a judge that
    failed or answered nonsense leaves the model's output complete, so it is exported as such and only counted.
    ``record`` is the parsed record, ``record_failure`` why none of it is scored ('' when it is: a malformed
    record, a model error, an unsupported sample) and :meth:`read` reads any file it names."""

    text: str
    images: list[bytes | None]
    steps: list[tuple[str, bytes | None]]
    failure: str
    judge_failure: str = ""
    record: UnifiedOutput = field(default_factory=lambda: UnifiedOutput("unknown"))
    record_failure: str = ""
    roots: list[Path] = field(default_factory=list)

    def read(self, relative: str | None) -> tuple[bytes | None, str]:
        """A file the record names: its checked bytes and ``""``, or None and why (:data:`NO_FILE`,
        :data:`MISSING`, :data:`UNREADABLE`)."""
        if not relative:
            return None, NO_FILE
        path = resolve_image(relative, self.roots)
        if path is None:
            return None, MISSING
        data = _read_checked(path, self.roots)
        return (data, "") if data is not None else (None, UNREADABLE)


def _read_checked(path: Path, roots: Sequence[Path]) -> bytes | None:
    """The bytes of an image that passes the scorers' reader: the checked file, fully decodable."""
    try:
        data = read_image_file(path, roots)
        with Image.open(io.BytesIO(data)) as image:
            image.load()
        return data
    except (gate.Refused, *DECODE_ERRORS):
        return None


def sample_output(row: Mapping, run: ModelSamples) -> SampleOutput:
    """The output of one logged sample with its images read (through the scorers' checked reader)."""
    raw = row.get("filtered_resps")
    raw = raw[0] if isinstance(raw, list) and raw else raw
    parsed = parse_output(raw if isinstance(raw, str) else json.dumps(raw))
    record = parsed.record
    output = SampleOutput(record.text, [], [], "", record=record, roots=media_roots(record.root, run.media))
    output.images = [output.read(p)[0] for p in record.images]
    output.steps = [(s.text, output.read(s.image)[0]) for s in record.steps]
    invalid = str(row.get("invalid_outputs") or "")
    output.judge_failure = judge_failure(row)
    output.record_failure = parsed.failure.reason if parsed.failure else UNSUPPORTED if parsed.unsupported else ""
    reasons = [
        "" if output.judge_failure else invalid,
        parsed.failure.reason if parsed.failure else "",
        record.error or "",
        "unsupported" if sample_unsupported(row) else "",
        "missing or unreadable image" if any(i is None for i in output.images) else "",
    ]
    output.failure = "; ".join(r for r in reasons if r)
    return output


def write_image(data: bytes | None, path: Path, report: ExportReport) -> Path | None:
    """Write a generated image's bytes to ``path``; None (nothing written) for a missing image or one the write
    gate refused (recorded in the report)."""
    if data is None:
        return None
    return path if report.write(path, data) else None


def write_json(obj: object, path: Path, report: ExportReport) -> None:
    """Write ``obj`` as indented UTF-8 JSON to ``path``."""
    report.write(path, json.dumps(obj, ensure_ascii=False, indent=2))


def write_reference(data: bytes, stem: Path, report: ExportReport) -> Path:
    """A reference image of the data, its bytes as stored, named ``stem`` + the suffix of its format; the path
    also when the write gate refused it (the refusal, in the report, fails the export)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            suffix = {"JPEG": ".jpg"}.get(str(image.format), f".{str(image.format or 'png').lower()}")
    except (OSError, ValueError, Image.DecompressionBombError):
        suffix = ".png"
    path = stem.with_name(stem.name + suffix)
    report.write(path, data)
    return path


def benchmark_tasks(run: ModelSamples, prefix: str) -> list[str]:
    """The run's logged tasks whose names start with ``prefix``, sorted."""
    return sorted(t for t in run.samples if t.startswith(prefix))


def safe_name(label: str) -> str:
    """``label`` as a folder name: characters other than letters, digits, ``.``, ``_``, ``-`` become ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "model"


def fresh(folder: Path) -> Path:
    """``folder``, refused when it already holds files: files of an earlier export (a ``_done.ok`` of a case
    that now failed, images of a longer run) would be read as part of this one."""
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty; export into a new --out folder")
    return folder


def model_folders(runs: Sequence[ModelSamples], out: Path, benchmark: str) -> list[tuple[ModelSamples, Path]]:
    """Each run that logged ``benchmark``'s tasks with its folder ``out/<model>/<benchmark>/``; every folder is
    checked to be :func:`fresh` before the caller writes any."""
    targets = [(run, out / safe_name(run.label) / benchmark) for run in runs if benchmark_tasks(run, f"{benchmark}_")]
    return [(run, fresh(target)) for run, target in targets]


@dataclass
class DocSource:
    """The docs of the runs' tasks from the local data (``--data-dir``, the gallery's loader): row i =
    doc_id i. ``row`` is None without a data folder, for an absent file or row, and for a task with
    ``process_docs``."""

    data_dir: Path | None
    cache: dict = field(default_factory=dict)

    def row(self, run: ModelSamples, task: str, doc_id: object) -> dict | None:
        """The doc ``doc_id`` of ``task`` as the run configured it, or None."""
        if self.data_dir is None or not isinstance(doc_id, int):
            return None
        return doc_row(run.configs.get(task, {}), doc_id, self.data_dir, self.cache)


def missing_docs_note(report: ExportReport, run: ModelSamples, task: str, missing: int, docs: DocSource) -> None:
    """Note how many of ``task``'s docs the local data lacked (nothing without ``--data-dir``)."""
    if docs.data_dir is not None and missing:
        report.notes.append(
            f"{run.label}/{task}: {missing} docs not found under {docs.data_dir} (process_docs task, or no "
            "such file/row); their items lack the doc fields and reference files"
        )


class BenchmarkExport(Protocol):
    """What ``lmms_eval_unify/benchmarks/<name>/export.py`` provides to the command.

    ``NEEDS_DOCS``: whether the released image metrics need the docs (without ``--data-dir`` the command
    notes that the export is text-only). ``export`` writes every run in ``runs`` that logged the benchmark's
    tasks under ``out`` (the ``--out`` folder; usually ``out/<model>/<name>/`` by :func:`model_folders`, or one
    folder for all models when the released tool reads them together), refusing a non-empty target folder
    (:func:`fresh`) before writing anything, and counts failed samples and notes in ``report``. ``read``
    reads one written folder back (what the released tool would read)."""

    NEEDS_DOCS: bool

    def export(self, runs: Sequence[ModelSamples], out: Path, report: ExportReport, docs: DocSource) -> None: ...

    def read(self, folder: Path) -> Mapping[str, object]: ...


# --- command --------------------------------------------------------------------------------------


NOT_COMPARABLE_FILE = "NOT_COMPARABLE.txt"
"""Written beside an export of offline trials (reference judge, tiny metrics) or of runs that asked part of a
dataset (``--limit``/``--offset``, the leaderboard's ``‡``): which runs, and why."""


class ReplacedRun(ValueError):
    """Runs of a configuration's task where the newer, the one kept, has fewer items than one it replaced."""


def replaced_fuller_runs(runs: Sequence[ModelSamples], prefix: str) -> list[str]:
    """One line per pair of runs where the newer, kept (``results_io.load_results``, as the leaderboard keeps it),
    replaced a run of more samples of the same configuration (a ``--limit`` smoke run after a full run), naming
    the tasks (names starting with ``prefix``) with their sample counts."""
    found: dict[tuple[str, Path, Path], list[str]] = {}
    for run in runs:
        for task, kept in run.task_runs.items():
            for earlier in run.replaced.get(task, []) if task.startswith(prefix) else []:
                if earlier.n > kept.n:
                    pair = (run.label, kept.run.results_file, earlier.run.results_file)
                    found.setdefault(pair, []).append(f"{task} ({kept.n} of {earlier.n} samples)")
    return [
        f"{label}: the newer run {kept} replaces {earlier} with fewer samples: {', '.join(tasks)}"
        for (label, kept, earlier), tasks in found.items()
    ]


def subset_notes(runs: Sequence[ModelSamples], prefix: str) -> list[str]:
    """One line per task (name starting with ``prefix``) whose samples are part of its dataset, with the
    leaderboard's caveat (``comparability.subset_caveat``: ``task: 3 of 9 items (--limit 3)``)."""
    return [
        f"{run.label}: {caveat}"
        for run in runs
        for task, kept in run.task_runs.items()
        if task.startswith(prefix) and (caveat := subset_caveat(task, kept))
    ]


def export(run_dirs: Sequence[Path], benchmark: str, out: Path, data_dir: Path | None = None) -> ExportReport:
    """Write the runs under ``run_dirs`` in ``benchmark``'s format under ``out`` (its export module's
    :class:`BenchmarkExport`). ``data_dir`` (the local-data folder) adds the docs' fields and reference files
    that the released image metrics need. Runs that were offline trials (reference judge, tiny metrics) or asked
    part of a dataset (``--limit``/``--offset``) are named, with why, in the notes and in ``NOT_COMPARABLE.txt``.
    Raises :class:`ReplacedRun`, before anything is written, when a newer run of a task with fewer samples
    replaced a fuller run of the same configuration (the released tools would score the smaller one, and their
    numbers carry no mark): the leaderboard marks such a cell ``‡`` and ``--strict`` refuses it."""
    report = ExportReport(root=Path(os.path.realpath(out)))
    docs = DocSource(data_dir)
    runs = load_runs(run_dirs)
    prefix = part(benchmark, "spec").TASK_PREFIX
    if replaced := replaced_fuller_runs(runs, prefix):
        raise ReplacedRun(
            "a run with fewer samples replaces a fuller run of the same configuration: "
            + "; ".join(replaced)
            + ". Name the results file(s) to export instead of their folder (RUN_DIR may be a *_results.json file)"
        )
    benchmark_export: BenchmarkExport = part(benchmark, "export")
    if benchmark_export.NEEDS_DOCS and data_dir is None:
        report.notes.append(
            f"no --data-dir (or ${DATA_DIR_ENV}): text metrics only; the released image metrics need the docs' "
            "reference images and ids"
        )
    benchmark_export.export(runs, out, report, docs)
    trials = [f"{run.label}: {trial}" for run in runs for trial in run.trials] + subset_notes(runs, prefix)
    if trials and report.files:
        report.notes += trials
        report.write(out / NOT_COMPARABLE_FILE, "\n".join(trials) + "\n")
    return report


def build_parser() -> argparse.ArgumentParser:
    """The ``export`` command's arguments."""
    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify export",
        description="Write saved runs in a benchmark's released exchange format (docs/scoring.md).",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval output folders")
    parser.add_argument("--benchmark", required=True, choices=BENCHMARKS)
    parser.add_argument("--out", required=True, type=Path, help="folder to write the export into")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=read(DATA_DIR_ENV),
        help=f"local data folder: adds the docs' fields and reference images (default ${DATA_DIR_ENV})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``export`` command; 0 on success, 1 when nothing was written, 2 on a missing or used folder, a
    folder another command is writing, a run with fewer samples replacing a fuller one (:class:`ReplacedRun`), or
    a file the write gate refused (the export is incomplete)."""
    args = build_parser().parse_args(argv)
    try:
        with folder_lock(args.out, "export"):
            report = export(args.run_dirs, args.benchmark, args.out, args.data_dir)
    except (FileNotFoundError, FileExistsError, FolderBusy, WriteRefused, ReplacedRun) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if report.refused:
        for refusal in report.refused:
            print(f"error: not written: {refusal}", file=sys.stderr)
        print(f"error: the export in {args.out} is incomplete: {len(report.refused)} file(s) refused", file=sys.stderr)
        return EXIT_REFUSED
    if not report.files:
        print(f"error: no {args.benchmark} samples under the given folders", file=sys.stderr)
        return 1
    for key, count in sorted(report.failures.items()):
        print(f"failed samples: {key}: {count} (written as the released tool expects a failure)")
    print(f"wrote {len(report.files)} files under {args.out} ({sum(report.failures.values())} failed samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
