"""`lmms-eval-unify gallery`: a static HTML site to look at what a model produced, sample by sample.

Reads lmms-eval output folders written with ``--log_samples`` (the same rows the leaderboard reads) and the
media our models wrote under ``<output_path>/unify_media``. Each sample shows its prompt (``input``), the
target, the parsed answer, per-metric scores, judge verdicts, failure reasons and every generated image or
visual-CoT step. lmms-eval 0.7.3 does not log docs, so input and reference images come from the local data
folder (``--data-dir``, default ``$LMMS_EVAL_UNIFY_DATA_DIR``) when the run read one. Several runs (models)
of the same tasks are shown side by side per doc. The site is ``index.html`` + ``data.js`` (+ the same data
as ``gallery.json``) + ``media/`` with thumbnails and full-size copies; it opens from disk, no server. Every
file goes through the write gate, confined to the site folder, under its writer lock (docs/limits.md).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import html
import io
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.judges.service import verdict_source
from lmms_eval_unify.output.media_reader import DECODE_ERRORS, check_image_bytes, read_image_file
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.reports.comparability import offline_stand_ins
from lmms_eval_unify.reports.results_io import TaskRun, load_results
from lmms_eval_unify.run.paths import DATA_DIR_ENV
from lmms_eval_unify.run.saved import run_media_roots
from lmms_eval_unify.scoring.samples import sample_unsupported
from lmms_eval_unify.writes import (
    EXIT_REFUSED,
    FolderBusy,
    WriteRefused,
    folder_lock,
    make_folder,
    say,
    write_or_record,
    write_text,
)

THUMB_PX = 256
PAGE_SIZE = 20
JUDGE_FAILURE_PREFIX = "judge_"
"""How ``invalid_outputs`` of a judged sample whose judge failed (``judge_failed``) or replied unparseably
(``judge_invalid``) starts."""
PARSED_KEYS = ("predicted", "predicted_moves", "chosen", "choice", "parsed", "prediction", "extracted")
NOT_METRICS = ("invalid_outputs",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify gallery",
        description="Write a static HTML gallery of the samples (prompts, images, answers, scores, verdicts) "
        "of lmms-eval --output_path folders written with --log_samples; several runs are shown side by side.",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval output folders")
    parser.add_argument("--output-dir", "-o", type=Path, default=Path("gallery"), help="site folder")
    parser.add_argument("--task", action="append", default=[], help="task name or glob (repeatable; default all tasks)")
    parser.add_argument("--only-wrong", action="store_true", help="keep docs that some run got wrong or failed")
    parser.add_argument("--limit", type=int, default=None, help="at most N docs per task")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=read(DATA_DIR_ENV),
        help=f"local data folder for input/reference images (default ${DATA_DIR_ENV})",
    )
    return parser


class MediaSite:
    """Copies images into ``<site>/media`` once each (named by content hash), with a thumbnail beside it, through
    the write gate (confined to the site folder); an image the gate refuses is left out, with a warning, and shows
    as missing."""

    def __init__(self, site: Path) -> None:
        self.site = site
        make_folder(site / "media" / "full", site)
        make_folder(site / "media" / "thumb", site)
        self.done: dict[str, dict[str, str] | None] = {}
        self.refused: list[WriteRefused] = []

    def add(self, data: bytes) -> dict[str, str] | None:
        """``{"full", "thumb"}`` site-relative paths of an image given as bytes; None if it does not decode or
        the gate refused to write it."""
        key = hashlib.sha1(data).hexdigest()[:20]
        if key in self.done:
            return self.done[key]
        try:
            check_image_bytes(data, "an image")
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                thumb = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
        except (gate.Refused, *DECODE_ERRORS):
            return None
        full = f"media/full/{key}.png"
        small = f"media/thumb/{key}.png"
        full_bytes = data if image.format == "PNG" else png_bytes(thumb)
        thumb.thumbnail((THUMB_PX, THUMB_PX))
        refused: list[WriteRefused] = []
        if write_or_record(self.site / full, full_bytes, self.site, refused):
            write_or_record(self.site / small, png_bytes(thumb), self.site, refused)
        for refusal in refused:
            say(f"gallery: image left out: {refusal}")
        self.refused += refused
        self.done[key] = None if refused else {"full": full, "thumb": small}
        return self.done[key]

    def add_file(self, path: Path, roots: Sequence[Path]) -> dict[str, str] | None:
        """Like :meth:`add` for a file inside ``roots``, read with the scorers' checks (the gate: confined,
        regular file, size; pixel and structure limits); None when it fails them."""
        try:
            return self.add(read_image_file(path, roots))
        except (gate.Refused, *DECODE_ERRORS):
            return None


@dataclass
class ModelSamples:
    """One model label's rows plus what the gallery needs from its results JSON."""

    label: str
    samples: dict[str, list[dict]]
    configs: dict[str, dict]
    run_dirs: list[Path]
    trials: list[str] = field(default_factory=list)
    """Why its numbers are offline trials, not measurements (``comparability.offline_stand_ins``)."""
    results_files: list[Path] = field(default_factory=list)
    """The results files of this configuration (its own, never another configuration's in the same folder)."""
    shards: dict[str, int] = field(default_factory=dict)
    """Task -> how many shard runs its samples were merged from (tasks of one run are absent)."""
    media: list[Path] = field(default_factory=list)
    """The only folders its records' images are read from (``run.saved.run_media_roots`` of its results files)."""
    task_runs: dict[str, TaskRun] = field(default_factory=dict)
    """Task -> what its samples rest on (``results_io.ModelResults.runs``)."""
    replaced: dict[str, list[TaskRun]] = field(default_factory=dict)
    """Task -> the earlier runs of it that a newer run replaced (``results_io.ModelResults.replaced``)."""


def load_runs(paths: Sequence[Path]) -> list[ModelSamples]:
    """Every model configuration found under the folders (``load_results``), with the task configs of its own
    results files (for metric lists and data paths) and what made its runs offline trials."""
    runs = []
    for label, model in load_results(paths).items():
        configs: dict[str, dict] = {}
        media: list[Path] = []
        for results_file in model.sources:
            try:
                results = gate.read_json(results_file, "data_file", [results_file.parent])
            except gate.Refused as refused:
                print(f"warning: skipped {refused}", file=sys.stderr)
                results = {}
            results = results if isinstance(results, dict) else {}
            media += run_media_roots(results_file, results)
            configs.update(results["configs"] if isinstance(results.get("configs"), dict) else {})
        trials = sorted({caveat for task, run in model.runs.items() for caveat in offline_stand_ins(task, run)})
        folders = [s.parent for s in model.sources]
        shards = {task: len(run.parts) for task, run in model.runs.items() if run.parts}
        runs.append(
            ModelSamples(
                label,
                model.samples,
                configs,
                run_dirs=folders,
                trials=trials,
                results_files=list(model.sources),
                shards=shards,
                media=list(dict.fromkeys(media)),
                task_runs=model.runs,
                replaced=model.replaced,
            )
        )
    return runs


def metric_names(config: Mapping, row: Mapping) -> list[str]:
    """The task's metrics in its YAML order (from the results JSON), else the row's numeric keys."""
    listed = [m.get("metric") for m in config.get("metric_list", []) if isinstance(m, Mapping)]
    names = [m for m in listed if isinstance(m, str) and m not in NOT_METRICS]
    return names or [k for k, v in row.items() if isinstance(v, (int, float)) and k != "doc_id"]


def headline_metric(metrics: Sequence[str], rows: Sequence[Mapping]) -> str | None:
    """The first metric that is 0/1 on every scored sample (what "correct" means); None if there is none."""
    for name in metrics:
        values = {row.get(name) for row in rows} - {None}
        if values and values <= {0, 1}:  # 0.0, 1.0 and booleans compare equal
            return name
    return None


def find_judges(details: object, path: str = "details") -> list[dict]:
    """Judge records anywhere in ``details``: dicts under a ``judge`` key or holding a ``verdict``, each with
    ``answered_by``: the judge its reply came from ('' when the record does not name it), None when no reply came
    (:func:`~lmms_eval_unify.judges.service.verdict_source`)."""
    found: list[dict] = []
    if isinstance(details, Mapping):
        for key, value in details.items():
            if isinstance(value, Mapping) and (key == "judge" or "verdict" in value):
                found.append({"where": f"{path}.{key}", **_jsonable(value), "answered_by": verdict_source(value)})
            elif isinstance(value, Mapping):
                found += find_judges(value, f"{path}.{key}")
    return found


def parsed_answer(details: object) -> str | None:
    """The answer the scorer read from the model's output, if the task records one in ``details``."""
    if not isinstance(details, Mapping):
        return None
    for key in PARSED_KEYS:
        if key in details:
            value = details[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def judge_failure(row: Mapping) -> str:
    """The sample's judge failure (``judge_failed``: no reply; ``judge_invalid``: no verdict in the reply), '' when
    its judge gave a verdict or none was asked. Its scores are the scorer's stand-ins, not a verdict on the output."""
    invalid = str(row.get("invalid_outputs") or "")
    return invalid if invalid.startswith(JUDGE_FAILURE_PREFIX) else ""


def failure_reasons(row: Mapping) -> list[str]:
    """Short reasons this sample could not be scored: ``invalid_outputs``, ``unsupported``."""
    reasons = []
    if isinstance(row.get("invalid_outputs"), str) and row["invalid_outputs"]:
        reasons.append(row["invalid_outputs"])
    if sample_unsupported(row):
        reasons.append("unsupported")
    return reasons


def _jsonable(value: object) -> object:
    return json.loads(json.dumps(value, default=str))


def media_roots(record_root: str, allowed: Sequence[Path]) -> list[Path]:
    """Where a record's media may be: its own root, or the folder of the same name in the run's media folders
    ``allowed`` (the run folder was moved or copied since), each kept only when it lies inside them
    (:attr:`ModelSamples.media`: :func:`~lmms_eval_unify.run.saved.run_media_roots`, the rule ``score``
    follows too). A record cannot make the gallery or an export read anything else, the run folder and its parent
    included."""
    if not record_root:
        return []
    candidates = [Path(record_root), *(base / Path(record_root).name for base in allowed)]
    roots = []
    for candidate in candidates:
        try:
            roots.append(gate.confine(candidate, allowed))
        except gate.Refused:
            continue
    return list(dict.fromkeys(roots))


def resolve_image(relative: str, roots: Sequence[Path]) -> Path | None:
    """The first file ``relative`` names under one of ``roots`` (never outside them), or None."""
    for root in roots:
        try:
            candidate = gate.join(root, relative)
        except gate.Refused:
            return None
        if candidate.is_file():
            return candidate
    return None


def output_view(row: Mapping, run: ModelSamples, site: MediaSite) -> dict:
    """The model output of one sample: text, generated images and protocol steps, with site image links."""
    raw = row.get("filtered_resps")
    raw = raw[0] if isinstance(raw, list) and raw else raw
    parsed = parse_output(raw if isinstance(raw, str) else json.dumps(raw))
    record = parsed.record
    roots = media_roots(record.root, run.media)

    def image(path: str | None) -> dict | None:
        if not path:
            return None
        found = resolve_image(path, roots)
        media = site.add_file(found, roots) if found else None
        return media or {"missing": path}

    step_images = {s.image for s in record.steps if s.image}
    return {
        "protocol": record.protocol,
        "text": record.text,
        "images": [image(p) for p in record.images if p not in step_images],
        "steps": [{"text": s.text, "image": image(s.image)} for s in record.steps],
        "error": record.error,
        "record_failure": parsed.failure.reason if parsed.failure else None,
    }


def doc_row(config: Mapping, doc_id: int, data_dir: Path | None, cache: dict) -> dict | None:
    """The doc's row in the local data parquet (row i = doc_id i), read once per file into ``cache``.

    None without ``data_dir``, when the file or row is absent, and for a task with ``process_docs``: its doc
    ids index the filtered docs, not the parquet rows.
    """
    if data_dir is None or config.get("process_docs"):
        return None
    benchmark = (config.get("metadata") or {}).get("benchmark")
    path = data_dir / str(benchmark) / str(config.get("dataset_name")) / f"{config.get('test_split')}.parquet"
    if path not in cache:
        cache[path] = _read_parquet(path, data_dir)
    table = cache[path]
    if table is None or not 0 <= doc_id < len(table):
        return None
    return table[doc_id]


def image_bytes(value: object) -> list[bytes]:
    """The encoded images of a parquet image cell or image-list cell (``{"bytes": ...}`` structs)."""
    cells = value if isinstance(value, list) else [value]
    return [c["bytes"] for c in cells if isinstance(c, Mapping) and isinstance(c.get("bytes"), bytes)]


def doc_images(config: Mapping, doc_id: int, data_dir: Path | None, site: MediaSite, cache: dict) -> list:
    """Images of the doc from the local data parquet (inputs and reference images), by column."""
    row = doc_row(config, doc_id, data_dir, cache)
    out = []
    for column, value in (row or {}).items():
        images = [m for m in map(site.add, image_bytes(value)) if m]
        if images:
            out.append({"column": column, "images": images})
    return out


def _read_parquet(path: Path, data_dir: Path) -> list[dict] | None:
    """The rows of a data-folder parquet (through the gate: inside ``data_dir``, a regular file), or None when
    it is absent or unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(gate.check_file(path, "data_file", [data_dir])).to_pylist()
    except (gate.Refused, pa.ArrowException, OSError):
        return None


def sample_view(row: Mapping, metrics: Sequence[str], headline: str | None, run: ModelSamples, site: MediaSite) -> dict:
    """Everything shown for one run's answer to one doc."""
    details = row.get("details")
    unjudged = judge_failure(row)
    value = row.get(headline) if headline and not unjudged else None
    return {
        "run": run.label,
        "scores": {m: row.get(m) for m in metrics if m in row},
        "headline": headline,
        "correct": None if value is None else bool(value == 1),
        "judge_failure": unjudged,
        "failures": failure_reasons(row),
        "failure_detail": details.get("failure") if isinstance(details, Mapping) else None,
        "parsed": parsed_answer(details),
        "judges": find_judges(details),
        "details": _jsonable(details),
        "output": output_view(row, run, site),
    }


def selected(task: str, patterns: Sequence[str]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(task, p) for p in patterns)


def is_wrong(view: Mapping) -> bool:
    return view["correct"] is False or bool(view["failures"])


def iter_docs(runs: Sequence[ModelSamples], patterns: Sequence[str]) -> Iterator[tuple[str, int, dict[str, dict]]]:
    """(task, doc_id, {run label: row}) for every doc of the selected tasks, in task then doc order."""
    tasks = sorted({t for run in runs for t in run.samples if selected(t, patterns)})
    for task in tasks:
        by_doc: dict[int, dict[str, dict]] = {}
        for run in runs:
            for row in run.samples.get(task, []):
                by_doc.setdefault(int(row.get("doc_id", 0)), {})[run.label] = row
        for doc_id in sorted(by_doc):
            yield task, doc_id, by_doc[doc_id]


def build_gallery(
    runs: Sequence[ModelSamples],
    site_dir: Path,
    patterns: Sequence[str] = (),
    only_wrong: bool = False,
    limit: int | None = None,
    data_dir: Path | None = None,
) -> dict:
    """Write the site's media and return its data (runs, tasks, failure reasons, docs)."""
    site = MediaSite(site_dir)
    parquet_cache: dict = {}
    heads: dict[str, tuple[list[str], str | None]] = {}
    per_task: dict[str, int] = {}
    docs = []
    for task, doc_id, rows in iter_docs(runs, patterns):
        if limit is not None and per_task.get(task, 0) >= limit:
            continue
        if task not in heads:
            run = next(r for r in runs if task in r.samples)
            metrics = metric_names(run.configs.get(task, {}), run.samples[task][0])
            heads[task] = (
                metrics,
                headline_metric(metrics, [r for x in runs for r in x.samples.get(task, [])]),
            )
        metrics, headline = heads[task]
        by_label = {r.label: r for r in runs}
        views = [sample_view(row, metrics, headline, by_label[label], site) for label, row in rows.items()]
        if only_wrong and not any(is_wrong(v) for v in views):
            continue
        per_task[task] = per_task.get(task, 0) + 1
        first = next(iter(rows.values()))
        config = by_label[next(iter(rows))].configs.get(task, {})
        docs.append(
            {
                "task": task,
                "doc_id": doc_id,
                "prompt": first.get("input") if isinstance(first.get("input"), str) else None,
                "target": _jsonable(first.get("target")),
                "doc_images": doc_images(config, doc_id, data_dir, site, parquet_cache),
                "answers": views,
            }
        )
    reasons = sorted({f for d in docs for v in d["answers"] for f in v["failures"]})
    return {
        "notices": [f"{run.label}: {trial}." for run in runs for trial in run.trials],
        "runs": [r.label for r in runs],
        "tasks": sorted(per_task),
        "headlines": {t: h for t, (_, h) in heads.items() if t in per_task},
        "failure_reasons": reasons,
        "page_size": PAGE_SIZE,
        "docs": docs,
    }


def png_bytes(image: Image.Image) -> bytes:
    """``image`` encoded as PNG."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def write_site(data: Mapping, site_dir: Path, title: str) -> Path:
    """``index.html`` + ``data.js`` (the data, loadable from file://) + ``gallery.json`` (the same data), through
    the write gate (confined to ``site_dir``); ``WriteRefused`` for the first file it refuses."""
    text = json.dumps(data, ensure_ascii=False)
    write_text(site_dir / "gallery.json", text, site_dir)
    write_text(site_dir / "data.js", f"window.GALLERY = {text};\n", site_dir)
    page = resources.files(__package__).joinpath("gallery_page.html").read_text(encoding="utf-8")
    notices = "".join(f'<p class="missing"><b>{html.escape(n)}</b></p>' for n in data.get("notices", ()))
    page = page.replace("__TITLE__", html.escape(title)).replace("__NOTICES__", notices)
    return write_text(site_dir / "index.html", page, site_dir)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        runs = load_runs(args.run_dirs)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        with folder_lock(args.output_dir, "gallery") as site:
            data = build_gallery(runs, site, args.task, args.only_wrong, args.limit, args.data_dir)
            if not data["docs"]:
                print("error: no samples match under the given folders (need --log_samples runs)", file=sys.stderr)
                return 1
            write_site(data, site, "lmms-eval-unify gallery: " + ", ".join(data["runs"]))
    except (FolderBusy, WriteRefused) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_REFUSED
    index = args.output_dir / "index.html"
    print(f"wrote {len(data['docs'])} docs of {len(data['tasks'])} tasks, {len(data['runs'])} runs: {index}")
    return 0
