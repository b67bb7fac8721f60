"""MME-Unify's exchange format (``lmms-eval-unify export --benchmark mme_unify``, docs/scoring.md).

One JSON list per subtask in the shape of ``evaluation/output_test_template.json`` (the input of the
``evaluate/Evaluate_*.py`` scripts), generated images copied beside it. With the local data (``--data-dir``)
the items also get the release's doc fields and the reference images its image metrics read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from lmms_eval_unify.benchmarks.mme_unify import spec
from lmms_eval_unify.reports.exports import (
    DocSource,
    ExportReport,
    SampleOutput,
    benchmark_tasks,
    missing_docs_note,
    model_folders,
    sample_output,
    write_image,
    write_json,
    write_reference,
)
from lmms_eval_unify.reports.gallery import RunInfo, image_bytes

NEEDS_DOCS = True
"""The released image metrics read the docs' reference images and ids."""

# Subtask -> the `category` the released template gives such items.
CATEGORIES = {
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
UNDERSTANDING = tuple(s.lower() for s in spec.UNDERSTANDING)
IMAGE_ONLY = tuple(s.lower() for s in spec.IMAGE_GENERATION)
VIDEO = tuple(s.lower() for s in spec.VIDEO)
# Subtask -> (column of our data, the release's `data` keys of its images in order).
REFERENCES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
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
DOC_FIELDS = ("question", "choice", "source", "index")
_ACTION = re.compile(r"Action\s*:\s*([A-Za-z]+)")
_LOCATION = re.compile(r"Location\s*:\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]")


def _details(row: Mapping) -> Mapping:
    details = row.get("details")
    return details if isinstance(details, Mapping) else {}


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


def template_item(subtask: str, row: Mapping, output: SampleOutput, images: Sequence[str | None]) -> dict:
    """One template item: ``id``, ``category``, ``answer`` and the model's ``output`` in the shape the released
    script of the subtask reads. A failed part is left out (the scripts count an absent part as wrong)."""
    details = _details(row)
    item = {"id": row.get("doc_id"), "category": CATEGORIES[subtask], "answer": row.get("target")}
    first = images[0] if images else None
    if subtask in UNDERSTANDING:
        item["output"] = "" if output.failure else str(details.get("chosen") or "")
    elif subtask in IMAGE_ONLY:
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


def doc_fields(subtask: str, doc: Mapping, folder: Path, report: ExportReport) -> dict:
    """The release item's fields that our data keeps: ``id`` (``question_id``/``id``), ``question``,
    ``choice``, ``source``, ``index`` (release list position), and its images written under ``folder`` as
    paths: ``data.<key>`` (VCoT ``data.Step_<k>`` plus ``data.Coordinate``; understanding: ``image``)."""
    fields: dict = {k: doc[k] for k in DOC_FIELDS if doc.get(k) is not None}
    release_id = doc.get("question_id", doc.get("id"))
    if release_id is not None:
        fields["id"] = release_id
    if subtask == "vcot":
        steps = image_bytes(doc.get("step_images"))
        fields["data"] = {
            f"Step_{k}": str(write_reference(b, folder / f"Step_{k}", report)) for k, b in enumerate(steps)
        }
        if doc.get("actions"):
            fields["data"]["Action"] = list(doc["actions"])
        fields["data"]["Coordinate"] = [json.loads(c) for c in doc.get("coordinates") or []]
    elif subtask in UNDERSTANDING:
        blobs = image_bytes(doc.get("image"))
        fields["image"] = [str(write_reference(b, folder / f"image_{k}", report)) for k, b in enumerate(blobs)]
    else:
        fields["data"] = {
            key: str(write_reference(blob, folder / key, report))
            for column, keys in REFERENCES.get(subtask, ())
            for key, blob in zip(keys, image_bytes(doc.get(column)), strict=False)
        }
    return fields


def export(runs: Sequence[RunInfo], out: Path, report: ExportReport, docs: DocSource) -> None:
    """Each run's items under ``out/<model>/mme_unify/`` (:func:`export_run`)."""
    for run, folder in model_folders(runs, out, spec.BENCHMARK):
        export_run(run, folder, report, docs)


def export_run(run: RunInfo, out: Path, report: ExportReport, docs: DocSource) -> None:
    """One ``<subtask>.json`` per MME-Unify task of the run, images under ``images/<subtask>/``; with the local
    data, the release's doc fields and reference images (under ``reference/<task>/<doc_id>/``) merged in."""
    for task in benchmark_tasks(run, spec.TASK_PREFIX):
        subtask = task.removeprefix(spec.TASK_PREFIX).removesuffix("_official")
        if subtask in VIDEO:
            report.notes.append(f"{run.label}/{task}: not exported (the released video script needs mp4 files)")
            continue
        items, missing, without_id = [], 0, 0
        for row in run.samples[task]:
            output = sample_output(row, run)
            report.count(f"{run.label}/{task}", output)
            sources = [s for _, s in output.steps] if subtask == "vcot" else output.images
            doc_id = row.get("doc_id")
            images = [
                write_image(data, out / "images" / task / f"{doc_id}_{k:02d}.png", report)
                for k, data in enumerate(sources)
            ]
            item = template_item(subtask, row, output, [str(p) if p else None for p in images])
            doc = docs.row(run, task, doc_id)
            if doc is None:
                missing += 1
            else:
                fields = doc_fields(subtask, doc, out / "reference" / task / str(doc_id), report)
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
        missing_docs_note(report, run, task, missing, docs)
        if without_id:
            report.notes.append(f"{run.label}/{task}: {without_id} docs without a release id keep our doc_id")
        write_json(items, out / f"{task}.json", report)


def read(folder: Path) -> dict[str, list[dict]]:
    """An MME-Unify export read back: task -> template items."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob(f"{spec.TASK_PREFIX}*.json"))}
