"""Uni-MMMU's exchange format (``lmms-eval-unify export --benchmark uni_mmmu``, docs/scoring.md).

Per task the run folder ``eval_ummmu.py`` reads: ``case_*/`` with ``model_text.txt``, ``model_image_XX.png``
(or ``cand_01/*.png`` for maze/sliding), ``result.json``, ``_done.ok``, plus the runner's ``summary.json``
and ``manifest.csv``. With the local data (``--data-dir``) the cases get the released names and the
reference files the released evaluator reads from its dataset folder.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from lmms_eval_unify.benchmarks.uni_mmmu import spec
from lmms_eval_unify.reports.exports import (
    UNSUPPORTED,
    DocSource,
    ExportReport,
    SampleOutput,
    benchmark_tasks,
    missing_docs_note,
    model_folders,
    safe_name,
    sample_output,
    write_image,
    write_json,
    write_reference,
)
from lmms_eval_unify.reports.gallery import ModelSamples, image_bytes

NEEDS_DOCS = True
"""The released image metrics read the docs' reference images and ids."""
# Tasks whose released runner writes the step images into one candidate folder.
CANDIDATE_FOLDER_TASKS = spec.STEP_TASKS
# The released parser reads every maze as 6x6; the folder name only has to match its regex.
RELEASED_MAZE_FOLDER = "maze_6x6"
RELEASED_SLIDING_FOLDER = "sliding_3x3"


def _moves(value: object) -> list:
    """Moves as stored: a JSON list string (the published parquet) or a list."""
    return list(json.loads(value) if isinstance(value, str) else value or [])


def case_name(name: str, doc_id: int, doc: Mapping | None) -> str:
    """The case folder: ``case_<doc_id>``; with the doc, the name the released evaluator looks up (jigsaw:
    the item id; geometry: the ``<big>__<small>`` id when the data keeps it; science: ``case_NN`` by
    release order; code: ``case_<doc_id>_<id>``)."""
    default = f"case_{doc_id:05d}"
    if doc is None:
        return default
    item_id = safe_name(str(doc.get("id") or ""))
    if name == "jigsaw" and doc.get("id"):
        return item_id
    if name == "geometry" and "__" in item_id:
        return item_id
    if name == "science":
        return f"case_{doc_id + 1:02d}"
    if name == "code" and doc.get("id"):
        return f"{default}_{item_id}"
    return default


def reference_files(name: str, case: str, doc_id: int, doc: Mapping, reference: Path, report: ExportReport) -> dict:
    """Write the files the released evaluator reads from the dataset folder ``reference`` and return the
    ``result.json`` keys that point at them: maze ``step0`` (+ ``maze_6x6_steps_<n>.json`` with
    ``steps_long``), sliding ``init_png`` (+ the step images and ``steps_words`` json), code ``png``/``svg``
    (relative to ``reference``, the evaluator's ``dataset_dir``); jigsaw's GT completions are returned for its
    ``metadata.json``."""
    initial = image_bytes(doc.get("initial_image"))
    if name == "maze" and initial:
        folder = reference / f"{RELEASED_MAZE_FOLDER}_{doc_id:05d}_steps"
        step0 = write_reference(initial[0], folder / "maze_step_0000", report)
        moves = _moves(doc.get("steps_long") or doc.get("steps"))
        write_json({"steps_long": moves}, reference / f"{RELEASED_MAZE_FOLDER}_steps_{doc_id:05d}.json", report)
        return {"step0": str(step0)}
    if name == "sliding" and initial:
        folder = reference / f"{RELEASED_SLIDING_FOLDER}_{doc_id:05d}_steps"
        init_png = write_reference(initial[0], folder / "demo_step_0000", report)
        for k, blob in enumerate(image_bytes(doc.get("step_images")), 1):
            write_reference(blob, folder / f"demo_step_{k:04d}", report)
        moves = _moves(doc.get("steps_words"))
        write_json(
            {"steps_words": moves},
            reference / f"{RELEASED_SLIDING_FOLDER}_steps_words_{doc_id:05d}.json",
            report,
        )
        return {"init_png": str(init_png)}
    if name == "code":
        keys = {}
        for blob in image_bytes(doc.get("gt_image"))[:1]:
            keys["png"] = str(write_reference(blob, reference / case, report).relative_to(reference))
        if doc.get("svg"):
            svg = reference / f"{case}.svg"
            report.write(svg, str(doc["svg"]))
            keys["svg"] = svg.name
        return keys
    if name == "jigsaw":
        paths = {
            key: str(write_reference(blobs[0], reference / case / key, report))
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


def scored_images(output: SampleOutput) -> list[bytes]:
    """The images to write for a case: all of them when every one is readable; none when one is missing or
    unreadable or the record is unusable, which the released evaluator scores as our scorers score the failure
    (maze/sliding image metrics 0, jigsaw's penalty distance, no judged image)."""
    if output.record_failure or any(image is None for image in output.images):
        return []
    return [image for image in output.images if image is not None]


def export(runs: Sequence[ModelSamples], out: Path, report: ExportReport, docs: DocSource) -> None:
    """Each run's task folders under ``out/<model>/uni_mmmu/`` (:func:`export_run`)."""
    for run, folder in model_folders(runs, out, spec.BENCHMARK):
        export_run(run, folder, report, docs)


def export_run(run: ModelSamples, out: Path, report: ExportReport, docs: DocSource) -> None:
    """Per task, the released runner's folder: ``case_*/`` + ``summary.json`` + ``manifest.csv``; with the
    local data, released case names and the reference files under ``reference/<task>/`` (the evaluator's
    ``dataset_dir``; jigsaw: its ``metadata.json``)."""
    for task in benchmark_tasks(run, spec.TASK_PREFIX):
        name = task.removeprefix(spec.TASK_PREFIX).removesuffix("_official")
        root = out / task
        per_item, manifest, metadata, missing = [], [], [], 0
        for row in run.samples[task]:
            output = sample_output(row, run)
            doc_id = int(row.get("doc_id", 0))
            doc = docs.row(run, task, doc_id)
            missing += docs.data_dir is not None and doc is None
            case = root / case_name(name, doc_id, doc)
            report.folder(case)
            images = scored_images(output)
            if name in CANDIDATE_FOLDER_TASKS:
                targets = [case / "cand_01" / f"step_{k:04d}.png" for k in range(1, len(images) + 1)]
            else:
                targets = [case / f"model_image_{k:02d}.png" for k in range(1, len(images) + 1)]
            written = [write_image(d, t, report) for d, t in zip(images, targets, strict=True)]
            text = "" if output.record_failure else output.text
            if text or (name in CANDIDATE_FOLDER_TASKS and output.record_failure != UNSUPPORTED):
                report.write(case / "model_text.txt", text)
            references = (
                {} if doc is None else reference_files(name, case.name, doc_id, doc, out / "reference" / task, report)
            )
            if name == "jigsaw":
                metadata += [references] if references and output.record_failure != UNSUPPORTED else []
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
            write_json(record, case / "result.json", report)
            report.count(f"{run.label}/{task}", output)
            if not output.failure:
                report.write(case / "_done.ok", "ok", listed=False)
            per_item.append(record)
            first = next((str(p.relative_to(root)) for p in written if p), "")
            manifest.append([case.name, row.get("doc_id"), first, output.failure or output.judge_failure])
        missing_docs_note(report, run, task, missing, docs)
        if metadata:
            write_json({"items": metadata}, out / "reference" / task / "metadata.json", report)
        summary = {
            "runner": f"lmms-eval-unify export ({run.label})",
            "count_total": len(per_item),
            "count_success": sum(r["status"] == "ok" for r in per_item),
            "count_error": sum(r["status"] == "error" for r in per_item),
            "per_item": per_item,
        }
        write_json(summary, root / "summary.json", report)
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer)
        writer.writerow(["case_id", "doc_id", "generated_first_image_rel", "notes"])
        writer.writerows(manifest)
        report.write(root / "manifest.csv", buffer.getvalue())


def read(folder: Path) -> dict[str, dict]:
    """A Uni-MMMU export read back: task -> {summary, manifest rows, cases: {case id: {text, images, result,
    done}}} in doc order; ``images`` are the case's image files in the order the released evaluator sorts
    them."""
    tasks = {}
    for root in sorted(p for p in folder.glob(f"{spec.TASK_PREFIX}*") if p.is_dir()):
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
