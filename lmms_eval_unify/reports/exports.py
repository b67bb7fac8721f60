"""`lmms-eval-unify export`: write our runs in each benchmark's own exchange format (docs/scoring.md).

So a maintainer can feed our samples to the released tools:

* MME-Unify: one JSON list per subtask in the shape of ``evaluation/output_test_template.json`` (the input of
  the ``evaluate/Evaluate_*.py`` scripts), generated images copied beside it;
* Uni-MMMU: per task the run folder ``eval_ummmu.py`` reads: ``case_*/`` with ``model_text.txt``,
  ``model_image_XX.png`` (or ``cand_01/*.png`` for maze/sliding), ``result.json``, ``_done.ok``, plus the
  runner's ``summary.json`` and ``manifest.csv``;
* GapEval: ``evaluate.py``'s input ``{model: [[p11, p10, p01, p00], ...]}``, one row per category;
* UniG2U: the ``summary.json`` that the fork's ``script/eval_all.sh`` collects (task -> metric -> value).

With the local data (``--data-dir``), MME-Unify items and Uni-MMMU cases also get the docs' fields, released
names and reference files that the released image metrics read (lmms-eval does not log docs).

Each ``read_*`` function reads an export back (the round trip the tests check). A failed sample (no output,
missing or unreadable image, model error, judge failure) is written the way the released tool expects a
failure and counted in the report.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.mme_unify import spec as mme_spec
from lmms_eval_unify.benchmarks.uni_mmmu.spec import STEP_TASKS
from lmms_eval_unify.integration.task import DATA_DIR_ENV
from lmms_eval_unify.output.media_reader import read_image_file
from lmms_eval_unify.output.record import parse_output
from lmms_eval_unify.reports.gallery import (
    RunInfo,
    doc_row,
    image_bytes,
    load_runs,
    media_roots,
    resolve_image,
)
from lmms_eval_unify.reports.results_io import RESULTS_SUFFIX, model_label
from lmms_eval_unify.scoring.samples import feature_means, sample_unsupported

# Benchmarks whose released image metrics need the docs (``--data-dir``).
DOC_BENCHMARKS = ("mme_unify", "uni_mmmu")
# Uni-MMMU tasks whose released runner writes the step images into one candidate folder.
CANDIDATE_FOLDER_TASKS = STEP_TASKS
# MME-Unify subtask -> the `category` the released template gives such items.
MME_CATEGORIES = {
    "sipu": "Single_Image_Perception_and_Understanding",
    "mitiu": "Multiple_Images_and_Text_Interlaced",
    "vpu": "Video_Perception_and_Understanding",
    "fir": "Fine-Grained_Image_Reconstruction",
    "tie": "Text-Image_Editing",
    "tig": "Text-Image_Generation",
    "iee": "Image_Editing_and_Explaining",
    "csq": "Uinfy_capability",
    "al": "Uinfy_capability",
    "sd": "Uinfy_capability",
    "vcot": "Visual CoT",
}
MME_UNDERSTANDING = tuple(s.lower() for s in mme_spec.UNDERSTANDING)
MME_IMAGE_ONLY = tuple(s.lower() for s in mme_spec.IMAGE_GENERATION)
MME_VIDEO = tuple(s.lower() for s in mme_spec.VIDEO)
# MME-Unify subtask -> (column of our data, the release's `data` keys of its images in order).
MME_REFERENCES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "fir": (("image", ("image",)),),
    "tie": (("image", ("image",)), ("edited_image", ("edited_image",)), ("mask_img", ("mask_img",))),
    "tig": (("image", ("image",)),),
    "iee": (
        ("inputs", ("image",)),
        ("candidates", ("edited_image", "fake_image1", "fake_image2", "fake_image3")),
    ),
    "csq": (("candidates", ("image", "fake_image1", "fake_image2", "fake_image3")),),
    "al": (
        ("inputs", ("image",)),
        ("candidates", ("image_Auxiliary_lines", *(f"image_Auxiliary_lines_negative{k}" for k in (1, 2, 3)))),
    ),
    "sd": (
        ("inputs", ("img_a", "img_b")),
        ("candidates", ("img_diff_a", *(f"img_diff_a_negative{k}" for k in (1, 2, 3)))),
    ),
}
# Release item fields our data keeps under the same name, and `index`: the item's position in its release JSON
# (prepared data only; the unique key, since the release's `id`s repeat in Generation, CSQ and AL).
MME_DOC_FIELDS = ("question", "choice", "source", "index")
# The released parser reads every maze as 6x6; the folder name only has to match its regex.
RELEASED_MAZE_FOLDER = "maze_6x6"
RELEASED_SLIDING_FOLDER = "sliding_3x3"
# `invalid_outputs` of a judged sample whose judge failed (`judge_failed`) or replied unparseably (`judge_invalid`).
JUDGE_FAILURE_PREFIX = "judge_"
_ACTION = re.compile(r"Action\s*:\s*([A-Za-z]+)")
_LOCATION = re.compile(r"Location\s*:\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]")


@dataclass
class ExportReport:
    """What an export wrote: files, failed samples per ``model/task``, and notes on what was left out."""

    files: list[Path] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def fail(self, key: str) -> None:
        self.failures[key] = self.failures.get(key, 0) + 1

    def count(self, key: str, output: SampleOutput) -> None:
        """Count a sample's model-side failure and, separately (``<key> (judge)``), its judge failure."""
        if output.failure:
            self.fail(key)
        if output.judge_failure:
            self.fail(f"{key} (judge)")

    def count_row(self, key: str, row: Mapping) -> None:
        """Like :meth:`count` from a logged row's ``invalid_outputs`` alone (exports that copy no media)."""
        invalid = str(row.get("invalid_outputs") or "")
        if invalid:
            self.fail(f"{key} (judge)" if invalid.startswith(JUDGE_FAILURE_PREFIX) else key)


@dataclass
class SampleOutput:
    """One sample's model output: text, the resolved generated images (None = missing/unreadable), steps, the
    model-side failure reason ('' when the output is usable) and a judge failure ('' when none): a judge that
    failed or answered nonsense leaves the model's output complete, so it is exported as such and only counted."""

    text: str
    images: list[bytes | None]
    steps: list[tuple[str, bytes | None]]
    failure: str
    judge_failure: str = ""


def _read_checked(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return read_image_file(path)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None


def sample_output(row: Mapping, run: RunInfo) -> SampleOutput:
    """The output of one logged sample with its images read (through the scorers' checked reader)."""
    raw = row.get("filtered_resps")
    raw = raw[0] if isinstance(raw, list) and raw else raw
    parsed = parse_output(raw if isinstance(raw, str) else json.dumps(raw))
    record = parsed.record
    roots = media_roots(record.root, run.run_dirs)

    def image(relative: str | None) -> bytes | None:
        return _read_checked(resolve_image(relative, roots)) if relative else None

    images = [image(p) for p in record.images]
    steps = [(s.text, image(s.image)) for s in record.steps]
    invalid = str(row.get("invalid_outputs") or "")
    judge = invalid if invalid.startswith(JUDGE_FAILURE_PREFIX) else ""
    reasons = [
        "" if judge else invalid,
        parsed.failure.reason if parsed.failure else "",
        record.error or "",
        "unsupported" if sample_unsupported(row) else "",
        "missing or unreadable image" if any(i is None for i in images) else "",
    ]
    return SampleOutput(record.text, images, steps, "; ".join(r for r in reasons if r), judge)


def _write_image(data: bytes | None, path: Path, report: ExportReport) -> Path | None:
    if data is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    report.files.append(path)
    return path


def _write_json(obj: object, path: Path, report: ExportReport) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2), encoding="utf-8")
    report.files.append(path)


def _details(row: Mapping) -> Mapping:
    details = row.get("details")
    return details if isinstance(details, Mapping) else {}


def _tasks(run: RunInfo, prefix: str) -> list[str]:
    return sorted(t for t in run.samples if t.startswith(prefix))


def _safe_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "model"


@dataclass
class DocSource:
    """The docs of the runs' tasks from the local data (``--data-dir``, the gallery's loader): row i =
    doc_id i. ``row`` is None without a data folder, for an absent file or row, and for a task with
    ``process_docs``."""

    data_dir: Path | None
    cache: dict = field(default_factory=dict)

    def row(self, run: RunInfo, task: str, doc_id: object) -> dict | None:
        if self.data_dir is None or not isinstance(doc_id, int):
            return None
        return doc_row(run.configs.get(task, {}), doc_id, self.data_dir, self.cache)


def _write_reference(data: bytes, stem: Path, report: ExportReport) -> Path:
    """A reference image of the data, its bytes as stored, named ``stem`` + the suffix of its format."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            suffix = {"JPEG": ".jpg"}.get(str(image.format), f".{str(image.format or 'png').lower()}")
    except (OSError, ValueError, Image.DecompressionBombError):
        suffix = ".png"
    path = stem.with_name(stem.name + suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    report.files.append(path)
    return path


def _moves(value: object) -> list:
    """Moves as stored: a JSON list string (the published parquet) or a list."""
    return list(json.loads(value) if isinstance(value, str) else value or [])


def _missing_docs_note(report: ExportReport, run: RunInfo, task: str, missing: int, docs: DocSource) -> None:
    if docs.data_dir is not None and missing:
        report.notes.append(
            f"{run.label}/{task}: {missing} docs not found under {docs.data_dir} (process_docs task, or no "
            "such file/row); their items lack the doc fields and reference files"
        )


# --- MME-Unify ------------------------------------------------------------------------------------


def vcot_steps(steps: Sequence[tuple[str, str | None]]) -> dict[str, dict]:
    """``outputs`` of a VCoT item: ``output_step_<i>`` with the parsed action, location, image path, text."""
    outputs = {}
    for i, (text, image) in enumerate(steps):
        action, location = _ACTION.search(text), _LOCATION.search(text)
        step = {"output_action": action.group(1) if action else "", "full_text": text}
        if location:
            step["output_location"] = [int(location.group(1)), int(location.group(2))]
        if image:
            step["output_image"] = image
        outputs[f"output_step_{i}"] = step
    return outputs


def mme_unify_item(subtask: str, row: Mapping, output: SampleOutput, images: Sequence[str | None]) -> dict:
    """One template item: ``id``, ``category``, ``answer`` and the model's ``output`` in the shape the released
    script of the subtask reads. A failed part is left out (the scripts count an absent part as wrong)."""
    details = _details(row)
    item = {"id": row.get("doc_id"), "category": MME_CATEGORIES[subtask], "answer": row.get("target")}
    first = images[0] if images else None
    if subtask in MME_UNDERSTANDING:
        item["output"] = "" if output.failure else str(details.get("chosen") or "")
    elif subtask in MME_IMAGE_ONLY:
        item["output"] = first or ""
    elif subtask == "vcot":
        item["data"] = {"Action": str(row.get("target") or "").split()}
        item["outputs"] = vcot_steps([(text, images[i]) for i, (text, _) in enumerate(output.steps)])
    else:
        predicted = details.get("predicted")
        parts = {
            "iee": {"output_explanation": output.text or None, "output_image": first},
            "csq": {"output_choice": predicted, "output_image": first},
            "al": {"output_choice": predicted, "output_image": first},
            "sd": {"selected_answer": predicted, "difference_image": first, "explanation": output.text},
        }[subtask]
        item["output"] = {k: v for k, v in parts.items() if v not in (None, "")}
    return item


def mme_unify_doc_fields(subtask: str, doc: Mapping, folder: Path, report: ExportReport) -> dict:
    """The release item's fields that our data keeps: ``id`` (``question_id``/``id``), ``question``,
    ``choice``, ``source``, ``index`` (release list position), and its images written under ``folder`` as
    paths: ``data.<key>`` (VCoT ``data.Step_<k>`` plus ``data.Coordinate``; understanding: ``image``)."""
    fields: dict = {k: doc[k] for k in MME_DOC_FIELDS if doc.get(k) is not None}
    release_id = doc.get("question_id", doc.get("id"))
    if release_id is not None:
        fields["id"] = release_id
    if subtask == "vcot":
        steps = image_bytes(doc.get("step_images"))
        fields["data"] = {
            f"Step_{k}": str(_write_reference(b, folder / f"Step_{k}", report)) for k, b in enumerate(steps)
        }
        if doc.get("actions"):
            fields["data"]["Action"] = list(doc["actions"])
        fields["data"]["Coordinate"] = [json.loads(c) for c in doc.get("coordinates") or []]
    elif subtask in MME_UNDERSTANDING:
        blobs = image_bytes(doc.get("image"))
        fields["image"] = [
            str(_write_reference(b, folder / f"image_{k}", report)) for k, b in enumerate(blobs)
        ]
    else:
        fields["data"] = {
            key: str(_write_reference(blob, folder / key, report))
            for column, keys in MME_REFERENCES.get(subtask, ())
            for key, blob in zip(keys, image_bytes(doc.get(column)), strict=False)
        }
    return fields


def export_mme_unify(run: RunInfo, out: Path, report: ExportReport, docs: DocSource) -> None:
    """One ``<subtask>.json`` per MME-Unify task of the run, images under ``images/<subtask>/``; with the local
    data, the release's doc fields and reference images (under ``reference/<task>/<doc_id>/``) merged in."""
    for task in _tasks(run, "mme_unify_"):
        subtask = task.removeprefix("mme_unify_").removesuffix("_official")
        if subtask in MME_VIDEO:
            report.notes.append(
                f"{run.label}/{task}: not exported (the released video script needs mp4 files)"
            )
            continue
        items, missing, without_id = [], 0, 0
        for row in run.samples[task]:
            output = sample_output(row, run)
            report.count(f"{run.label}/{task}", output)
            sources = [s for _, s in output.steps] if subtask == "vcot" else output.images
            doc_id = row.get("doc_id")
            images = [
                _write_image(data, out / "images" / task / f"{doc_id}_{k:02d}.png", report)
                for k, data in enumerate(sources)
            ]
            item = mme_unify_item(subtask, row, output, [str(p) if p else None for p in images])
            doc = docs.row(run, task, doc_id)
            if doc is None:
                missing += 1
            else:
                fields = mme_unify_doc_fields(subtask, doc, out / "reference" / task / str(doc_id), report)
                without_id += "id" not in fields
                item = {
                    **item,
                    **fields,
                    "doc_id": doc_id,
                    "data": {**item.get("data", {}), **fields.get("data", {})},
                }
                if not item["data"]:
                    del item["data"]
            items.append(item)
        _missing_docs_note(report, run, task, missing, docs)
        if without_id:
            report.notes.append(f"{run.label}/{task}: {without_id} docs without a release id keep our doc_id")
        _write_json(items, out / f"{task}.json", report)


def read_mme_unify(folder: Path) -> dict[str, list[dict]]:
    """An MME-Unify export read back: task -> template items."""
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("mme_unify_*.json"))
    }


# --- Uni-MMMU -------------------------------------------------------------------------------------


def uni_mmmu_case_name(name: str, doc_id: int, doc: Mapping | None) -> str:
    """The case folder: ``case_<doc_id>``; with the doc, the name the released evaluator looks up (jigsaw:
    the item id; geometry: the ``<big>__<small>`` id when the data keeps it; science: ``case_NN`` by
    release order; code: ``case_<doc_id>_<id>``)."""
    default = f"case_{doc_id:05d}"
    if doc is None:
        return default
    item_id = _safe_name(str(doc.get("id") or ""))
    if name == "jigsaw" and doc.get("id"):
        return item_id
    if name == "geometry" and "__" in item_id:
        return item_id
    if name == "science":
        return f"case_{doc_id + 1:02d}"
    if name == "code" and doc.get("id"):
        return f"{default}_{item_id}"
    return default


def uni_mmmu_references(
    name: str, case: str, doc_id: int, doc: Mapping, reference: Path, report: ExportReport
) -> dict:
    """Write the files the released evaluator reads from the dataset folder ``reference`` and return the
    ``result.json`` keys that point at them: maze ``step0`` (+ ``maze_6x6_steps_<n>.json`` with
    ``steps_long``), sliding ``init_png`` (+ the step images and ``steps_words`` json), code ``png``/``svg``
    (relative to ``reference``, the evaluator's ``dataset_dir``); jigsaw's GT completions are returned for its
    ``metadata.json``."""
    initial = image_bytes(doc.get("initial_image"))
    if name == "maze" and initial:
        folder = reference / f"{RELEASED_MAZE_FOLDER}_{doc_id:05d}_steps"
        step0 = _write_reference(initial[0], folder / "maze_step_0000", report)
        moves = _moves(doc.get("steps_long") or doc.get("steps"))
        _write_json(
            {"steps_long": moves}, reference / f"{RELEASED_MAZE_FOLDER}_steps_{doc_id:05d}.json", report
        )
        return {"step0": str(step0)}
    if name == "sliding" and initial:
        folder = reference / f"{RELEASED_SLIDING_FOLDER}_{doc_id:05d}_steps"
        init_png = _write_reference(initial[0], folder / "demo_step_0000", report)
        for k, blob in enumerate(image_bytes(doc.get("step_images")), 1):
            _write_reference(blob, folder / f"demo_step_{k:04d}", report)
        moves = _moves(doc.get("steps_words"))
        _write_json(
            {"steps_words": moves},
            reference / f"{RELEASED_SLIDING_FOLDER}_steps_words_{doc_id:05d}.json",
            report,
        )
        return {"init_png": str(init_png)}
    if name == "code":
        keys = {}
        for blob in image_bytes(doc.get("gt_image"))[:1]:
            keys["png"] = str(_write_reference(blob, reference / case, report).relative_to(reference))
        if doc.get("svg"):
            svg = reference / f"{case}.svg"
            svg.parent.mkdir(parents=True, exist_ok=True)
            svg.write_text(str(doc["svg"]), encoding="utf-8")
            report.files.append(svg)
            keys["svg"] = svg.name
        return keys
    if name == "jigsaw":
        paths = {
            key: str(_write_reference(blobs[0], reference / case / key, report))
            for key in ("gt_completed_image", "gt_wrong_image", "ref_image", "cand0_image", "cand1_image")
            if (blobs := image_bytes(doc.get(key)))
        }
        if "gt_completed_image" not in paths or "gt_wrong_image" not in paths:
            return {}
        return {
            "id": case,
            "label": doc.get("label"),
            "gt_completed_2x2_path": paths["gt_completed_image"],
            "gt_wrong_2x2_path": paths["gt_wrong_image"],
            "ref_panel": {"ref_image_path": paths.get("ref_image")},
            "candidate_paths": [paths.get("cand0_image"), paths.get("cand1_image")],
        }
    return {}


def export_uni_mmmu(run: RunInfo, out: Path, report: ExportReport, docs: DocSource) -> None:
    """Per task, the released runner's folder: ``case_*/`` + ``summary.json`` + ``manifest.csv``; with the
    local data, released case names and the reference files under ``reference/<task>/`` (the evaluator's
    ``dataset_dir``; jigsaw: its ``metadata.json``)."""
    for task in _tasks(run, "uni_mmmu_"):
        name = task.removeprefix("uni_mmmu_").removesuffix("_official")
        root = out / task
        per_item, manifest, metadata, missing = [], [], [], 0
        for row in run.samples[task]:
            output = sample_output(row, run)
            doc_id = int(row.get("doc_id", 0))
            doc = docs.row(run, task, doc_id)
            missing += docs.data_dir is not None and doc is None
            case = root / uni_mmmu_case_name(name, doc_id, doc)
            case.mkdir(parents=True, exist_ok=True)
            if name in CANDIDATE_FOLDER_TASKS:
                targets = [case / "cand_01" / f"step_{k:04d}.png" for k in range(1, len(output.images) + 1)]
            else:
                targets = [case / f"model_image_{k:02d}.png" for k in range(1, len(output.images) + 1)]
            written = [_write_image(d, t, report) for d, t in zip(output.images, targets, strict=True)]
            if output.text:
                (case / "model_text.txt").write_text(output.text, encoding="utf-8")
                report.files.append(case / "model_text.txt")
            references = (
                {}
                if doc is None
                else uni_mmmu_references(name, case.name, doc_id, doc, out / "reference" / task, report)
            )
            if name == "jigsaw":
                metadata += [references] if references else []
                references = {}
            record = {
                "id": case.name,
                "doc_id": row.get("doc_id"),
                "target": row.get("target"),
                "status": "error" if output.failure else "ok",
                "errors": [output.failure] if output.failure else [],
                "images": [str(p.relative_to(case)) for p in written if p],
                "judge_failure": output.judge_failure,
                **references,
            }
            _write_json(record, case / "result.json", report)
            report.count(f"{run.label}/{task}", output)
            if not output.failure:
                (case / "_done.ok").write_text("ok", encoding="utf-8")
            per_item.append(record)
            first = next((str(p.relative_to(root)) for p in written if p), "")
            manifest.append([case.name, row.get("doc_id"), first, output.failure or output.judge_failure])
        _missing_docs_note(report, run, task, missing, docs)
        if metadata:
            _write_json({"items": metadata}, out / "reference" / task / "metadata.json", report)
        summary = {
            "runner": f"lmms-eval-unify export ({run.label})",
            "count_total": len(per_item),
            "count_success": sum(r["status"] == "ok" for r in per_item),
            "count_error": sum(r["status"] == "error" for r in per_item),
            "per_item": per_item,
        }
        _write_json(summary, root / "summary.json", report)
        with (root / "manifest.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["case_id", "doc_id", "generated_first_image_rel", "notes"])
            writer.writerows(manifest)
        report.files.append(root / "manifest.csv")


def read_uni_mmmu(folder: Path) -> dict[str, dict]:
    """A Uni-MMMU export read back: task -> {summary, manifest rows, cases: {case id: {text, images, result,
    done}}} in doc order; ``images`` are the case's image files in the order the released evaluator sorts
    them."""
    tasks = {}
    for root in sorted(p for p in folder.glob("uni_mmmu_*") if p.is_dir()):
        summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
        cases = {}
        for item in sorted(summary["per_item"], key=lambda r: r["doc_id"]):
            case = root / item["id"]
            text = case / "model_text.txt"
            images = sorted(case.glob("cand_01/*.*")) or sorted(case.glob("model_image_*.*"))
            cases[case.name] = {
                "text": text.read_text(encoding="utf-8") if text.exists() else "",
                "images": images,
                "result": json.loads((case / "result.json").read_text(encoding="utf-8")),
                "done": (case / "_done.ok").exists(),
            }
        with (root / "manifest.csv").open(newline="", encoding="utf-8") as f:
            manifest = list(csv.DictReader(f))
        tasks[root.name] = {"summary": summary, "manifest": manifest, "cases": cases}
    return tasks


# --- GapEval --------------------------------------------------------------------------------------


def gapeval_rows(run: RunInfo) -> tuple[list[list[float]] | None, dict[str, int]]:
    """``[p11, p10, p01, p00]`` per category (in ``gapeval.CATEGORIES`` order) and the paired rows behind each;
    None when a category lacks a direction (the released fit needs all rows of a model)."""
    rows, sizes = [], {}
    for category in ge.CATEGORIES:
        und, gen = (run.samples.get(t) for t in ge.task_names(category))
        if not und or not gen:
            return None, sizes
        features = ge.joint_features(und, gen)
        means = feature_means(features)
        rows.append(list(ge.joint_proportions(means["succ"], means["und"], means["gen"])))
        sizes[category] = len(features["succ"])
    return rows, sizes


def export_gapeval(runs: Sequence[RunInfo], out: Path, report: ExportReport) -> None:
    """``gapeval_joint.json`` (``evaluate.py``'s input) and ``gapeval_joint_rows.json`` (row order, pair
    counts and failed samples per category)."""
    joint, meta = {}, {}
    for run in runs:
        if not _tasks(run, "gapeval_"):
            continue
        rows, sizes = gapeval_rows(run)
        if rows is None:
            report.notes.append(f"{run.label}: GapEval left out, not every category has both directions")
            continue
        for task in _tasks(run, "gapeval_"):
            for row in run.samples[task]:
                report.count_row(f"{run.label}/{task}", row)
        joint[run.label] = rows
        meta[run.label] = {"pairs": sizes}
    if joint:
        _write_json(joint, out / "gapeval_joint.json", report)
        _write_json(
            {"row_order": list(ge.CATEGORIES), "models": meta}, out / "gapeval_joint_rows.json", report
        )


def read_gapeval(folder: Path) -> dict[str, list[list[float]]]:
    """The GapEval export read back: model -> rows ``[p11, p10, p01, p00]``."""
    return json.loads((folder / "gapeval_joint.json").read_text(encoding="utf-8"))


# --- UniG2U ---------------------------------------------------------------------------------------


def unig2u_summary(run: RunInfo) -> dict[str, dict]:
    """task -> metric -> value as ``script/eval_all.sh`` collects it from lmms-eval's results files (``alias``
    and ``*stderr*`` keys dropped), UniG2U tasks only; a task run twice keeps the newest run's values."""
    summary: dict[str, dict] = {}
    files = sorted(
        {f for d in run.run_dirs for f in d.glob(f"*{RESULTS_SUFFIX}")}, key=lambda p: (p.name, str(p))
    )
    for results_file in files:
        results = json.loads(results_file.read_text(encoding="utf-8"))
        if model_label(results) != run.label:
            continue
        for task, metrics in results.get("results", {}).items():
            if task in run.samples and task.startswith("unig2u_"):
                summary[task] = {
                    k: v for k, v in metrics.items() if k not in ("alias", " ") and "stderr" not in k
                }
    return summary


def export_unig2u(run: RunInfo, out: Path, report: ExportReport) -> None:
    """``summary.json`` of the run's UniG2U tasks."""
    summary = unig2u_summary(run)
    for task in summary:
        for row in run.samples[task]:
            report.count_row(f"{run.label}/{task}", row)
    if summary:
        _write_json(summary, out / "summary.json", report)


def read_unig2u(folder: Path) -> dict[str, dict]:
    """A UniG2U export read back: task -> metric -> value."""
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


# --- command --------------------------------------------------------------------------------------


def export(run_dirs: Sequence[Path], benchmark: str, out: Path, data_dir: Path | None = None) -> ExportReport:
    """Write the runs under ``run_dirs`` in ``benchmark``'s format under ``out/<model>/<benchmark>/`` (GapEval:
    one file for all models, ``out/gapeval/``). ``data_dir`` (the local-data folder) adds the docs' fields and
    reference files that the released image metrics need (MME-Unify, Uni-MMMU)."""
    report = ExportReport()
    docs = DocSource(data_dir)
    runs = load_runs(run_dirs)
    if benchmark == "gapeval":
        export_gapeval(runs, _fresh(out / "gapeval"), report)
        return report
    if benchmark in DOC_BENCHMARKS and data_dir is None:
        report.notes.append(
            f"no --data-dir (or ${DATA_DIR_ENV}): text metrics only; the released image metrics need the docs' "
            "reference images and ids"
        )
    writers = {
        "mme_unify": lambda run, target: export_mme_unify(run, target, report, docs),
        "uni_mmmu": lambda run, target: export_uni_mmmu(run, target, report, docs),
        "unig2u": lambda run, target: export_unig2u(run, target, report),
    }
    targets = [(run, out / _safe_name(run.label) / benchmark) for run in runs if _tasks(run, f"{benchmark}_")]
    for run, target in [(run, _fresh(target)) for run, target in targets]:
        writers[benchmark](run, target)
    return report


def _fresh(folder: Path) -> Path:
    """``folder``, refused when it already holds files: files of an earlier export (a ``_done.ok`` of a case
    that now failed, images of a longer run) would be read as part of this one."""
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty; export into a new --out folder")
    return folder


def build_parser() -> argparse.ArgumentParser:
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
        default=os.environ.get(DATA_DIR_ENV) or None,
        help=f"local data folder: adds the docs' fields and reference images (default ${DATA_DIR_ENV})",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        report = export(args.run_dirs, args.benchmark, args.out, args.data_dir)
    except (FileNotFoundError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if not report.files:
        print(f"error: no {args.benchmark} samples under the given folders", file=sys.stderr)
        return 1
    for key, count in sorted(report.failures.items()):
        print(f"failed samples: {key}: {count} (written as the released tool expects a failure)")
    print(
        f"wrote {len(report.files)} files under {args.out} ({sum(report.failures.values())} failed samples)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
