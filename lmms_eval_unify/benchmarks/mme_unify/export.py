"""MME-Unify's exchange format (``lmms-eval-unify export --benchmark mme_unify``, docs/scoring.md).

One JSON list per task: the input of the released ``evaluate/Evaluate_*.py`` script of its subtask, in the shape
that script reads (``evaluation/output_test_template.json`` differs where the scripts do: the generation script
reads ``output.output_image`` and ``Text_Prompt``, the VCoT script ``subcategory``, the video script ``output2``).
Generated images are copied under ``images/<task>/``; a video is written as a lossless mp4 of its frames under
``videos/<task>/`` with its key frames (the scripts' scene-change rule) as the ``output2`` list the video script
reads. Paths of model outputs are absolute; with the local data (``--data-dir``) the items get the release's doc
fields and its reference images and videos under ``reference/<task>/<doc_id>/``, as paths relative to the model's
export folder: pass that folder as the scripts' base path (``--base_path``, ``IMAGE_BASE_PATH``, ``mp4_prefix``).

A failed output is written so that the released script's own rule for it applies (docs/fidelity/mme_unify.md):
no file is an empty path; a file the record names but the run does not hold is a path that does not exist
(``*.missing.png``); an unreadable file is a file no image reader decodes; an unusable record (malformed, model
error, unsupported) leaves the answer out and marks a generation item with ``error``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify import spec
from lmms_eval_unify.benchmarks.mme_unify.generation import keyframe_indices
from lmms_eval_unify.benchmarks.mme_unify.scoring import iee_explanation, parse_step
from lmms_eval_unify.reports.exports import (
    MISSING,
    NO_FILE,
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
from lmms_eval_unify.reports.gallery import ModelSamples, image_bytes

NEEDS_DOCS = True
"""The released image metrics read the docs' reference images and ids."""

# Subtask -> the `category` the released data and scripts give such items.
CATEGORIES = {
    "sipu": "Single_Image_Perception_and_Understanding",
    "mitiu": "Multiple_Images_and_Text_Interlaced",
    "vpu": "Video_Perception_and_Understanding",
    "fir": "Fine-Grained_Image_Reconstruction",
    "tie": "Text-Image_Editing",
    "tig": "Text-Image_Generation",
    "civg": "Conditional_Image_to_Video_Generation",
    "tvg": "Text-to-Video_Generation",
    "vp": "Video prediction",
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
    "civg": (("image", ("image",)),),
    "vp": (("image", ("image",)),),
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
# The release's `data` key of the reference video: the video script reads CIVG/VP's from `video`, TVG's from `image`.
VIDEO_KEYS = {"civg": "video", "vp": "video", "tvg": "image"}
# Release item fields our data keeps under the same name, and `index`: the item's position in its release JSON
# (prepared data only; the unique key, since the release's `id`s repeat in Generation, CSQ and AL).
DOC_FIELDS = ("question", "choice", "source", "subcategory", "index")
UNREADABLE_FILE = b"lmms-eval-unify export: the model's file could not be read (see the run folder)\n"
"""What an unreadable generated file is written as: bytes no image or video reader decodes."""
MP4_FPS = 8

FileWriter = Callable[[str | None, str], str]
"""``(path in the record, name) -> path the released script reads`` for one generated file (:func:`file_writer`)."""


def file_writer(output: SampleOutput, folder: Path, report: ExportReport) -> FileWriter:
    """Writes the files of one sample under ``folder`` as ``<name>.png`` and returns the path to put in the item:
    the copy; a path that does not exist for a missing file; a file no reader decodes for an unreadable one;
    ``""`` for no file."""

    def write(relative: str | None, name: str) -> str:
        data, fault = output.read(relative)
        if fault == NO_FILE:
            return ""
        if fault == MISSING:
            return str(folder / f"{name}.missing.png")
        target = folder / f"{name}.png"
        return str(write_image(data if data is not None else UNREADABLE_FILE, target, report) or target)

    return write


def _details(row: Mapping) -> Mapping:
    details = row.get("details")
    return details if isinstance(details, Mapping) else {}


def vcot_outputs(output: SampleOutput, write: FileWriter) -> dict[str, dict]:
    """``outputs`` of a VCoT item: ``output_step_<i>`` with the action and location our scorer parses (absent when
    it finds none), the step image (``""`` without one) and the step's text; nothing for an unusable record."""
    outputs = {}
    for i, step in enumerate([] if output.record_failure else output.record.steps):
        action, location = parse_step(step.text)
        entry: dict = {"output_action": action, "output_location": location}
        entry = {k: v for k, v in entry.items() if v is not None}
        outputs[f"output_step_{i}"] = {
            **entry,
            "output_image": write(step.image, f"step_{i:02d}"),
            "full_text": step.text,
        }
    return outputs


def single_image(output: SampleOutput) -> str | None:
    """The record's output image where the subtask takes one: None (no file) for an unusable record or another
    number of images (our scorers' ``wrong_image_count``)."""
    images = output.record.images
    return images[0] if len(images) == 1 and not output.record_failure else None


def unify_output(subtask: str, row: Mapping, output: SampleOutput, image: str) -> dict:
    """``output`` of an IEE/CSQ/AL/SD item: the answer our scorer read (left out when it read none) and the image."""
    usable = not output.record_failure
    predicted = _details(row).get("predicted") if usable else None
    if subtask == "iee":
        return {"output_explanation": iee_explanation(output.text) if usable else "", "output_image": image}
    if subtask == "sd":
        parts = {"selected_answer": predicted, "difference_image": image, "explanation": output.text if usable else ""}
    else:
        parts = {"output_choice": predicted, "output_image": image}
    return {k: v for k, v in parts.items() if v is not None}


def template_item(subtask: str, row: Mapping, output: SampleOutput, write: FileWriter) -> dict:
    """One item without the doc's fields: ``id``, ``category``, ``subcategory``, the truth our data logs
    (``answer``, VCoT ``data.Action``, generation ``Text_Prompt``) and the model's output in the shape the
    released script of ``subtask`` reads (videos: :func:`video_output`)."""
    item: dict = {"id": row.get("doc_id"), "category": CATEGORIES[subtask], "subcategory": ""}
    target = str(row.get("target") or "")
    if subtask in UNDERSTANDING:
        item.update(answer=target, output=str(_details(row).get("chosen") or ""))
    elif subtask == "vcot":
        item.update(data={"Action": target.split()}, outputs=vcot_outputs(output, write))
    elif subtask in IMAGE_ONLY:
        item.update(Text_Prompt=target, output={"output_image": write(single_image(output), "00")})
    elif subtask not in VIDEO:
        item.update(answer=target, output=unify_output(subtask, row, output, write(single_image(output), "00")))
    else:
        item["Text_Prompt"] = target
    if output.record_failure and subtask in (*IMAGE_ONLY, *VIDEO):
        item["error"] = output.record_failure
    return item


def write_mp4(frames: Sequence[Image.Image], path: Path, report: ExportReport) -> Path:
    """A lossless H.264 (RGB) mp4 of ``frames`` at :data:`MP4_FPS`, written with PyAV; frames of another size than
    the first are resized to it (an mp4 holds one size)."""
    import av

    size = frames[0].size
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as container:
        stream = container.add_stream("libx264rgb", rate=MP4_FPS, options={"qp": "0"})
        stream.width, stream.height = size
        stream.pix_fmt = "rgb24"
        for frame in frames:
            picture = frame.convert("RGB") if frame.size == size else frame.convert("RGB").resize(size)
            for packet in stream.encode(av.VideoFrame.from_image(picture)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    report.write(path, buffer.getvalue())
    return path


def video_output(output: SampleOutput, folder: Path, name: str, report: ExportReport) -> dict:
    """``output`` (the mp4 of every frame) and ``output2`` (its key frames, by the scripts' scene-change rule, as
    the model wrote them) of a video item; ``{"output": ""}`` and the reason when the output is unusable (no
    frames, a missing or unreadable frame, an unusable record)."""
    read = [output.read(p) for p in output.record.video_frames]
    faults = sorted({fault for _, fault in read if fault})
    if output.record_failure or not read or faults:
        return {"output": "", "error": output.record_failure or "; ".join(faults) or "no video frames"}
    blobs = [data for data, _ in read if data is not None]
    frames = [Image.open(io.BytesIO(data)).convert("RGB") for data in blobs]
    video = write_mp4(frames, folder / f"{name}.mp4", report)
    keys = keyframe_indices(frames)
    paths = [write_image(blobs[k], folder / f"{name}_keyframes" / f"keyframe_{k:04d}.png", report) for k in keys]
    return {"output": str(video), "output2": [str(p) for p in paths if p]}


def doc_fields(subtask: str, doc: Mapping, out: Path, folder: Path, report: ExportReport) -> dict:
    """The release item's fields that our data keeps: ``id`` (``question_id``/``id``), ``question``, ``choice``,
    ``source``, ``subcategory``, ``index`` (release list position), ``Text_Prompt``, and its images and videos
    written under ``folder`` as paths relative to ``out``: ``data.<key>`` (VCoT ``data.Step_<k>`` plus
    ``data.Coordinate``; understanding: ``image``)."""
    fields: dict = {k: doc[k] for k in DOC_FIELDS if doc.get(k) is not None}
    if doc.get("Text_Prompt") is not None:
        fields["Text_Prompt"] = doc["Text_Prompt"]
    release_id = doc.get("question_id", doc.get("id"))
    if release_id is not None:
        fields["id"] = release_id

    def reference(data: bytes, stem: str) -> str:
        return str(write_reference(data, folder / stem, report).relative_to(out))

    if subtask == "vcot":
        steps = image_bytes(doc.get("step_images"))
        fields["data"] = {f"Step_{k}": reference(b, f"Step_{k}") for k, b in enumerate(steps)}
        if doc.get("actions"):
            fields["data"]["Action"] = list(doc["actions"])
        fields["data"]["Coordinate"] = [json.loads(c) for c in doc.get("coordinates") or []]
    elif subtask in UNDERSTANDING:
        fields["image"] = [reference(b, f"image_{k}") for k, b in enumerate(image_bytes(doc.get("image")))]
    else:
        fields["data"] = {
            key: reference(blob, key)
            for column, keys in REFERENCES.get(subtask, ())
            for key, blob in zip(keys, image_bytes(doc.get(column)), strict=False)
        }
        video = Path(str(doc.get("video") or ""))
        if subtask in VIDEO and video.is_file():
            copy = folder / f"video{video.suffix}"
            report.write(copy, video.read_bytes())
            fields["data"][VIDEO_KEYS[subtask]] = str(copy.relative_to(out))
    return fields


def export(runs: Sequence[ModelSamples], out: Path, report: ExportReport, docs: DocSource) -> None:
    """Each run's items under ``out/<model>/mme_unify/`` (:func:`export_run`)."""
    for run, folder in model_folders(runs, out, spec.BENCHMARK):
        export_run(run, folder, report, docs)


def export_run(run: ModelSamples, out: Path, report: ExportReport, docs: DocSource) -> None:
    """One ``<task>.json`` per MME-Unify task of the run, generated images under ``images/<task>/``, videos under
    ``videos/<task>/``; with the local data, the release's doc fields and reference files (under
    ``reference/<task>/<doc_id>/``) merged in."""
    for task in benchmark_tasks(run, spec.TASK_PREFIX):
        subtask = task.removeprefix(spec.TASK_PREFIX).removesuffix("_official")
        items, missing, without_id = [], 0, 0
        for row in run.samples[task]:
            output = sample_output(row, run)
            report.count(f"{run.label}/{task}", output)
            doc_id = row.get("doc_id")
            item = template_item(subtask, row, output, file_writer(output, out / "images" / task / str(doc_id), report))
            if subtask in VIDEO:
                item.update(video_output(output, out / "videos" / task, str(doc_id), report))
            doc = docs.row(run, task, doc_id)
            if doc is None:
                missing += 1
            else:
                folder = out / "reference" / task / str(doc_id)
                report.folder(folder)
                fields = doc_fields(subtask, doc, out, folder, report)
                without_id += "id" not in fields
                item = {**item, **fields, "doc_id": doc_id, "data": {**item.get("data", {}), **fields.get("data", {})}}
                if not item["data"]:
                    del item["data"]
            items.append(item)
        missing_docs_note(report, run, task, missing, docs)
        if without_id:
            report.notes.append(f"{run.label}/{task}: {without_id} docs without a release id keep our doc_id")
        write_json(items, out / f"{task}.json", report)


def read(folder: Path) -> dict[str, list[dict]]:
    """An MME-Unify export read back: task -> items."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob(f"{spec.TASK_PREFIX}*.json"))}
