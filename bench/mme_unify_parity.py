"""MME-Unify: our export fed unchanged to the released scripts, per subtask and per sample, against our ``official``
scores.

Usage: ``python bench/mme_unify_parity.py [--released DIR] [--n 6] [--models 3] [--seed 0]`` where DIR holds the
released ``evaluate/*.py`` of aba122/MME-Unify (a checkout's ``evaluate`` folder; they are not part of this repo).

The bench generates the offline data of all 14 subtasks, then runs of ``--models`` models whose outputs mix right,
wrong and failed answers (copies of each candidate, resized and noise images, missing and unreadable files, no
image, two images, model errors, short and long videos, VCoT steps with both coordinate conventions). Each output
is scored by our ``official`` task scorers exactly as lmms-eval's ``process_results`` calls them, the runs are
written as lmms-eval folders and exported with ``lmms-eval-unify export --data-dir``. Without ``--released`` that
is all (our side, end to end: the export is read back and our official numbers printed). With ``--released`` every
exported file goes to the released script of its subtask (the whole file for the aggregate, one item at a time
for the per-sample result where the script only reports totals) and each sample's result is compared with ours.

The scorers read the generated outputs from the bench's scratch folder: the bench adds it to
``$LMMS_EVAL_UNIFY_MEDIA_ROOTS`` (a real run registers its media folder itself). The released scripts'
``transformers`` CLIP, LPIPS and Inception/ResNet models are replaced by stand-ins on our tiny random backbones,
so both sides embed with the same weights: the check covers what the scripts do with the files and features
(failure rules, argmax and tie order, VCoT averaging, TIE/TIG resizing, key frames, frame sampling, skipped
samples, FVD/FID normalisation), not the checkpoints. Results: docs/fidelity/mme_unify.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import math
import os
import random
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import torch
from _outputs import OutputFiles
from PIL import Image
from torchvision.transforms.functional import to_tensor

from lmms_eval_unify.benchmarks.mme_unify import export as mme_export
from lmms_eval_unify.benchmarks.mme_unify import paper as mu
from lmms_eval_unify.benchmarks.mme_unify import spec
from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation
from lmms_eval_unify.benchmarks.mme_unify.inputs import doc_to_target
from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate
from lmms_eval_unify.benchmarks.mme_unify.scoring import (
    METRICS_ENV,
    metric_config,
    option_labels,
    prompt_coordinates,
    score_multiple_choice,
    score_unify_qa,
    score_vcot,
)
from lmms_eval_unify.generation.visuals import read_video_frames, to_pil_images
from lmms_eval_unify.metrics.clip import ClipBackbone, get_clip
from lmms_eval_unify.metrics.config import as_config
from lmms_eval_unify.metrics.fid_fvd import load_image_features
from lmms_eval_unify.metrics.lpips_metric import load_lpips
from lmms_eval_unify.metrics.registry import get_backbone
from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.reports.exports import export
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV
from lmms_eval_unify.scoring.samples import feature_means
from lmms_eval_unify.testing.synthetic import write_run

TINY = {"backbone": "tiny", "weights": "random"}
TINY_METRICS = {"clip_choice": TINY, "clip_score": TINY, "lpips": {"weights": "random"}, "fid": TINY, "fvd": TINY}
"""Our tiny random backbones for every metric family, on both sides (``$LMMS_EVAL_UNIFY_MME_UNIFY_METRICS``)."""
SCRIPTS = {
    **dict.fromkeys(spec.UNDERSTANDING, "Evaluate_Understanding"),
    **dict.fromkeys(spec.IMAGE_GENERATION, "Evaluate_Generation"),
    **dict.fromkeys(spec.VIDEO, "Evaluate_Generation_Video"),
    "IEE": "Evaluate_IEE",
    "CSQ": "Evaluate_CS",
    "AL": "Evaluate_Math_Geo",
    "SD": "Evaluate_SpotDiff",
    "VCoT": "Evaluate_VSP",
}
FEATURE_WIDTH = 2048  # the released video script checks that its features have 2048 columns
TOLERANCE = 1e-4


# --- the released models, routed to our backbones ------------------------------------------------------------


class _Batch(dict):
    """Processor output: ``.to(device)`` on the whole batch or on each value is a no-op."""

    def to(self, device: Any) -> _Batch:
        return self


class _Items(list):
    def to(self, device: Any) -> _Items:
        return self


class StandInProcessor:
    """``CLIPProcessor`` stand-in: keeps the PIL images and texts for ``StandInModel``."""

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> StandInProcessor:
        return cls()

    def __call__(self, images: Any = None, text: Any = None, **kwargs: Any) -> _Batch:
        batch = _Batch()
        if images is not None:
            batch["pixel_values"] = _Items(i.convert("RGB") for i in (images if isinstance(images, list) else [images]))
        if text is not None:
            batch["input_ids"] = _Items(text if isinstance(text, list) else [text])
        return batch


class StandInModel:
    """``CLIPModel`` stand-in embedding with one of our CLIP backbones."""

    device = "cpu"
    clip: ClipBackbone

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> StandInModel:
        return cls()

    def to(self, device: Any) -> StandInModel:
        return self

    def get_image_features(self, pixel_values: list[Image.Image]) -> torch.Tensor:
        return self.clip.embed_images(pixel_values).double()

    def get_text_features(self, input_ids: list[str], **kwargs: Any) -> torch.Tensor:
        return self.clip.embed_texts(input_ids).double()

    def __call__(self, pixel_values: list[Image.Image], input_ids: list[str], **kwargs: Any) -> SimpleNamespace:
        image, text = self.get_image_features(pixel_values), self.get_text_features(input_ids)
        return SimpleNamespace(
            logits_per_image=self.clip.logit_scale * image @ text.T, image_embeds=image, text_embeds=text
        )


def clip_model(family: str) -> type[StandInModel]:
    """A ``CLIPModel`` stand-in class on our ``family`` CLIP backbone (``clip_choice`` or ``clip_score``)."""
    return type("Model", (StandInModel,), {"clip": get_clip(TINY, family)})


def _pictures(batch: torch.Tensor) -> list[Image.Image]:
    """[0, 1] image tensors (N, C, H, W) back to the 8-bit pictures they were made from."""
    pixels = (batch.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    return [Image.fromarray(p) for p in pixels]


def _wide(features: torch.Tensor) -> torch.Tensor:
    """Our features padded with zeros to the released width (squared distances unchanged)."""
    return torch.nn.functional.pad(features.float(), (0, FEATURE_WIDTH - features.shape[-1]))


class FrameFeatures(torch.nn.Module):
    """The video script's Inception stand-in: our ``fid`` backbone on each image of a (N, C, H, W) batch."""

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        encoder = get_backbone(as_config("fid", metric_config("fid")), load_image_features)
        return _wide(encoder.embed(_pictures(batch)))


class VideoFeatures(torch.nn.Module):
    """The video script's ResNet stand-in: our ``fvd`` backbone on every frame of (B, C, T, H, W), frame-averaged."""

    def forward(self, videos: torch.Tensor) -> torch.Tensor:
        encoder = get_backbone(as_config("fvd", metric_config("fvd")), load_image_features)
        return _wide(torch.stack([encoder.embed(_pictures(v.transpose(0, 1))).mean(dim=0) for v in videos]))


def released(name: str) -> ModuleType:
    """A released script imported with its CLIP classes replaced by the stand-ins (its CLIP family)."""
    module = importlib.import_module(name)
    family = "clip_score" if name.startswith("Evaluate_Generation") else "clip_choice"
    if hasattr(module, "CLIPModel"):
        module.CLIPModel, module.CLIPProcessor = clip_model(family), StandInProcessor
    return module


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """Run in ``folder`` (several scripts write their results file into the working folder), quietly."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.chdir(cwd)


# --- outputs -------------------------------------------------------------------------------------------------


class Media(OutputFiles):
    """Where one model's outputs are written: files the record names by paths relative to ``root``."""

    def image(self, kind: str, picture: Image.Image | None = None) -> list[str]:
        """The record's ``images`` for one image of ``kind``; ``none`` = no image, ``two`` = two copies."""
        if kind == "none":
            return []
        if kind == "two":
            return [self.file("picture", picture), self.file("picture", picture)]
        return [self.file(kind, picture)]


def model_error(protocol: str) -> str:
    return UnifiedOutput(protocol, error="generation failed: CUDA out of memory").to_json()


def understanding_output(doc: dict, media: Media, rng: random.Random) -> str:
    labels = option_labels(list(doc["choice"]))
    kind = rng.choice(["right", "right", "random", "random", "none", "error"])
    text = {"right": f"Answer: {doc['answer']}", "random": f"Answer: {rng.choice(labels)}", "none": "I cannot tell."}
    return model_error("text") if kind == "error" else UnifiedOutput("text", text=text[kind]).to_json()


def unify_output(subtask: str, doc: dict, media: Media, rng: random.Random) -> str:
    kind = rng.choice(["copy0", "copy0", "copy1", "copy2", "copy3", "missing", "corrupt", "none", "two", "error"])
    if kind == "error":
        return model_error("answer_and_image")
    candidates = to_pil_images(list(doc["candidates"]))
    picture = candidates[int(kind[-1])] if kind.startswith("copy") else candidates[0]
    if subtask == "IEE":
        option = rng.choice(list(doc["choice"])).split(":", 1)[-1].strip()
        text = rng.choice([f"Explanation: {option}", f"explanation:{option}", option, ""])
    else:
        text = rng.choice([f"Answer: {doc['answer']}", f"Answer: {rng.choice('ABCD')}", "No idea."])
    image = media.image(kind if kind in ("missing", "corrupt", "none", "two") else "picture", picture)
    return UnifiedOutput("answer_and_image", text=text, images=image, root=str(media.root)).to_json()


def vcot_output(doc: dict, media: Media, rng: random.Random) -> str:
    if rng.random() < 0.1:
        return model_error("visual_cot_steps")
    actions, coords = list(doc["actions"]), [json.loads(c) for c in doc["coordinates"]]
    pool = to_pil_images(list(doc["step_images"]))
    steps = []
    for i in range(rng.choice([len(actions), len(actions), len(actions) - 1, 2, len(actions) + 1])):
        last = min(i, len(actions) - 1)
        action = actions[last] if rng.random() < 0.7 else rng.choice(["Up", "Down", "Left", "Right", "Finish"])
        location = rng.choice([coords[last], prompt_coordinates(doc)[last], [rng.randint(0, 5), rng.randint(0, 5)]])
        kind = rng.choice(["right", "right", "other", "initial", "missing", "corrupt", "none"])
        picture = {
            "right": pool[min(i, len(pool) - 1)],
            "other": rng.choice(pool),
            "initial": to_pil_images(doc["initial_image"])[0],
        }
        image = media.image(
            {"right": "picture", "other": "picture", "initial": "picture"}.get(kind, kind), picture.get(kind)
        )
        steps.append(
            Step(text=f"Action: {action}\nLocation: [{location[0]}, {location[1]}]", image=(image or [None])[0])
        )
    return UnifiedOutput("visual_cot_steps", steps=steps, root=str(media.root)).to_json()


def generation_output(subtask: str, doc: dict, media: Media, rng: random.Random) -> str:
    kind = rng.choice(["resized", "resized", "noise", "same", "missing", "corrupt", "none", "two", "error"])
    if kind == "error":
        return model_error("image_only")
    reference = to_pil_images(doc["edited_image" if subtask == "TIE" else "image"])[0]
    size = (rng.randint(16, 3 * reference.width), rng.randint(16, 3 * reference.height))
    noise = np.random.default_rng(rng.randrange(10**6)).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    picture = {"resized": reference.resize(size), "noise": Image.fromarray(noise), "same": reference}.get(
        kind, reference
    )
    image = media.image(kind if kind in ("missing", "corrupt", "none", "two") else "picture", picture)
    return UnifiedOutput("image_only", images=image, root=str(media.root)).to_json()


def video_output(subtask: str, doc: dict, media: Media, rng: random.Random) -> str:
    """Frames: the reference clip resampled to 6, 16, 24 or 40 frames, jittered or cut by scene changes, or noise;
    or a failure (a missing or unreadable frame, no frames, a model error)."""
    kind = rng.choice(["clip", "clip", "scenes", "noise", "missing", "corrupt", "none", "error"])
    if kind == "error":
        return model_error("video")
    count = rng.choice([6, 16, 24, 40])
    if doc.get("video"):
        frames = read_video_frames(doc["video"], 10**6)
        frames = [frames[i] for i in np.linspace(0, len(frames) - 1, count).astype(int)]
    else:
        frames = [Image.new("RGB", (64, 48), (rng.randrange(256), 90, 40)) for _ in range(count)]
    noise = np.random.default_rng(rng.randrange(10**6))
    if kind == "noise":
        frames = [Image.fromarray(noise.integers(0, 255, (48, 64, 3), dtype=np.uint8)) for _ in range(count)]
    elif kind == "scenes":
        frames = [f if i % 3 else Image.eval(f, lambda v: 255 - v) for i, f in enumerate(frames)]
    names = [] if kind == "none" else [media.file("picture", f) for f in frames]
    if kind in ("missing", "corrupt"):
        names[rng.randrange(len(names))] = media.file(kind)
    return UnifiedOutput("video", video_frames=names, root=str(media.root)).to_json()


# --- runs, scored by our official scorers --------------------------------------------------------------------


def docs_of(data: Path, subtask: str) -> list[dict]:
    return pq.read_table(data / "mme_unify" / subtask.lower() / "test.parquet").to_pylist()


def score(subtask: str, doc: dict, raw: str) -> dict:
    """The logged row of one output: our official task's ``process_results``, as lmms-eval calls it."""
    if subtask in spec.UNDERSTANDING:
        return score_multiple_choice(doc, [raw])
    if subtask in spec.UNIFY_QA:
        return score_unify_qa(doc, [raw], subtask=subtask, variant="official")
    if subtask == "VCoT":
        return score_vcot(doc, [raw], variant="official")
    return score_generation(doc, [raw], subtask=subtask, variant="official")


def output_for(subtask: str, doc: dict, media: Media, rng: random.Random) -> str:
    if subtask in spec.UNDERSTANDING:
        return understanding_output(doc, media, rng)
    if subtask in spec.UNIFY_QA:
        return unify_output(subtask, doc, media, rng)
    if subtask == "VCoT":
        return vcot_output(doc, media, rng)
    if subtask in spec.VIDEO:
        return video_output(subtask, doc, media, rng)
    return generation_output(subtask, doc, media, rng)


def write_runs(data: Path, runs: Path, models: int, rng: random.Random) -> dict[str, dict[str, list[dict]]]:
    """``models`` lmms-eval run folders of every subtask's official task (understanding: its one task), with the
    task configs the export's ``--data-dir`` needs; model -> task -> logged rows."""
    logged = {}
    for m in range(models):
        model = f"model{m}"
        tasks = {}
        for subtask in spec.SUBTASKS:
            task = spec.task_name(subtask, "official")
            media = Media(runs / model / "unify_media" / model / task)
            rows = []
            for doc_id, doc in enumerate(docs_of(data, subtask)):
                raw = output_for(subtask, doc, media, rng)
                rows.append(
                    {
                        "doc_id": doc_id,
                        "target": doc_to_target(doc),
                        "filtered_resps": [raw],
                        **score(subtask, doc, raw),
                    }
                )
            tasks[task] = rows
        path = write_run(runs, model, tasks)
        results = json.loads(path.read_text())
        results["configs"] = {
            spec.task_name(s, "official"): {
                "dataset_name": s.lower(),
                "test_split": "test",
                "metadata": {"benchmark": "mme_unify"},
            }
            for s in spec.SUBTASKS
        }
        path.write_text(json.dumps(results))
        logged[model] = tasks
    return logged


def official_scores(subtask: str, rows: list[dict]) -> dict[str, float]:
    """Our official Table 2/3 values of one subtask from its logged rows."""
    means = {spec.task_name(subtask): feature_means(mu.task_features(subtask, rows, "official"))}
    return {k: v for k, v in mu.table2_row(means).items() if k == subtask or k.startswith(f"{subtask} ")}


# --- the released scripts on the export ----------------------------------------------------------------------


def same(a: float | None, b: float | None) -> bool:
    """Both absent, or equal within :data:`TOLERANCE` (relative: the tiny backbones' distances are small)."""
    return (a is None) == (b is None) and (a is None or math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=1e-9))


def one_item(item: dict, scratch: Path) -> Path:
    """``item`` alone in a results file, unchanged (for scripts that report totals only)."""
    path = scratch / "one_item.json"
    path.write_text(json.dumps([item]))
    return path


def check_understanding(items: list[dict], rows: list[dict], scratch: Path, base: Path) -> tuple[int, dict]:
    module = released("Evaluate_Understanding")
    agree = sum(module.calculate_accuracy([i])[0] == (r.get("acc") or 0.0) for i, r in zip(items, rows, strict=True))
    return agree, {"acc": 100 * module.calculate_accuracy(items)[0]}


def check_unify(subtask: str, items: list[dict], rows: list[dict], scratch: Path, base: Path) -> tuple[int, dict]:
    """Per item (text correct, image correct) and the whole file's text/image accuracy, by the released script."""
    module = released(SCRIPTS[subtask])
    if subtask == "AL":
        module.IMAGE_BASE_PATH = str(base)
        with inside(scratch):
            evaluator = module.Evaluator()
            pairs = [(evaluator._evaluate_choice(i)["correct"], evaluator._evaluate_image(i)["correct"]) for i in items]
            totals = evaluator.calculate_metrics(items)
        text, image = totals["choice_metrics"]["accuracy"], totals["image_metrics"]["accuracy"]
    elif subtask == "SD":
        model, processor = module.CLIPModel(), StandInProcessor()
        with inside(scratch):
            pairs = [
                (module.evaluate_text_answer(i)[1], module.evaluate_image_prediction(i, model, processor, str(base))[1])
                for i in items
            ]
            totals = module.evaluate_results(str(scratch / "items.json"), str(base))
        text, image = totals["text_metrics"]["accuracy"], totals["image_metrics"]["accuracy"]
    else:

        def run(path: Path) -> dict:
            with inside(scratch):
                if subtask == "IEE":
                    return module.evaluate_results(str(path), str(base))
                module.evaluate_results(SimpleNamespace(input_json=str(path), base_path=str(base)))
            return json.loads((path.parent / "evaluation_results.json").read_text())

        results = [run(one_item(i, scratch)) for i in items]
        pairs = [(r["text_metrics"]["correct"], r["image_metrics"]["correct"]) for r in results]
        totals = run(scratch / "items.json")
        text, image = totals["text_metrics"]["accuracy"], totals["image_metrics"]["accuracy"]
    ours = [(r["text_correct"], r["image_correct"]) for r in rows]
    agree = sum(tuple(map(float, p)) == tuple(map(float, o)) for p, o in zip(pairs, ours, strict=True))
    return agree, {f"{subtask} Text": text, f"{subtask} Image": image}


def check_vcot(items: list[dict], rows: list[dict], scratch: Path, base: Path) -> tuple[int, dict]:
    module = released("Evaluate_VSP")
    with inside(scratch):
        evaluator = module.VisualCoTEvaluator(str(scratch / "items.json"), image_base_path=str(base))
        steps = [evaluator.evaluate_sample(i)["step_results"] for i in evaluator.results]
        accuracies = evaluator.calculate_accuracies()["overall"]["average_accuracies"]
    theirs = [[sum(s[a]["correct"] for s in sample) for a in ("action", "location", "image")] for sample in steps]
    ours = [[r[f"{a}_steps_correct"] for a in ("action", "coordinate", "image")] for r in rows]
    agree = sum(t == o for t, o in zip(theirs, ours, strict=True))
    names = {"action": "VCoT Action", "location": "VCoT Coordinate", "image": "VCoT Image"}
    values = {names[k]: accuracies[k]["avg_accuracy"] for k in names}
    return agree, {**values, "VCoT": accuracies["overall"]["avg_accuracy"]}


def check_image_generation(
    subtask: str, items: list[dict], rows: list[dict], scratch: Path, base: Path
) -> tuple[int, dict]:
    """``Evaluate_Generation.py``'s own ``main`` on the exported file (its hard-coded path and models redirected);
    each item's metrics are recorded as ``main`` computes them."""
    module = released("Evaluate_Generation")
    recorded: dict[str, dict | None] = {}

    def init(self: Any) -> None:
        self.device, self.base_path = "cpu", str(base)
        self.lpips_model = get_backbone(as_config("lpips", metric_config("lpips")), load_lpips).model
        self.clip_model, self.clip_processor = module.CLIPModel(), StandInProcessor()

    def recording(method: Callable) -> Callable:
        def call(self: Any, output_path: str, *args: Any) -> dict | None:
            recorded[output_path] = result = method(self, output_path, *args)
            return result

        return call

    evaluator = module.ImageEvaluator
    patches = {
        name: recording(getattr(evaluator, name))
        for name in ("evaluate_reconstruction", "evaluate_editing", "evaluate_generation")
    }
    originals = {name: getattr(evaluator, name) for name in (*patches, "__init__")}
    for name, method in {**patches, "__init__": init}.items():
        setattr(evaluator, name, method)
    module.open = lambda path, *args, **kwargs: open(scratch / "items.json", *args, **kwargs)
    try:
        with inside(scratch):
            module.main()
    finally:
        for name, method in originals.items():
            setattr(evaluator, name, method)
        del module.open
    theirs = [recorded.get(i["output"]["output_image"]) if not i.get("error") else None for i in items]
    keys = ("lpips",) if subtask == "FIR" else ("clip_i", "clip_t")
    agree = sum(all(same(r.get(k), t.get(k) if t else None) for k in keys) for r, t in zip(rows, theirs, strict=True))
    scored = [t for t in theirs if t]
    if subtask == "FIR":
        return agree, {"FIR": 100 * (1 - np.mean([t["lpips"] for t in scored]))}
    return agree, {subtask: (100 * np.mean([t["clip_i"] for t in scored]) + np.mean([t["clip_t"] for t in scored])) / 2}


def video_calculator(module: ModuleType) -> Any:
    """``VideoMetricsCalculator`` with our backbones in its models' places and images kept at their size."""
    calculator = module.VideoMetricsCalculator.__new__(module.VideoMetricsCalculator)
    calculator.device = torch.device("cpu")
    calculator.fvd_extractor, calculator.inception = VideoFeatures(), FrameFeatures()
    calculator.transform = calculator.inception_transform = to_tensor
    clip = module.CLIPMetrics.__new__(module.CLIPMetrics)
    clip.device, clip.model, clip.processor = "cpu", clip_model("clip_score")(), StandInProcessor()
    calculator.clip_metrics = clip
    return calculator


VIDEO_RESULTS = {"CIVG": "image_to_video", "TVG": "text_to_video", "VP": "video_prediction"}
COMPARED = {"CIVG": ("fvd", "fid", "clipsim"), "TVG": ("fvd", "clipsim"), "VP": ("fvd", "fid")}
"""Per-sample values compared: the script computes no TVG "FID" (ours compares each key frame with the reference
video's frame at its position)."""


def check_video(subtask: str, items: list[dict], rows: list[dict], scratch: Path, base: Path) -> tuple[int, dict]:
    """``process_dataset`` (the script's entry point minus its hard-coded path) on the exported file, and on each
    item alone for its FVD, FID and CLIP score; plus the key frames the script's ``extract_keyframes`` takes
    from our mp4 against our ``output2``."""
    module = released("Evaluate_Generation_Video")
    calculator = video_calculator(module)

    def run(path: Path) -> dict:
        with inside(scratch):
            return calculator.process_dataset(str(path), str(base))[VIDEO_RESULTS[subtask]]

    agree = same_keys = videos = 0
    for item, row in zip(items, rows, strict=True):
        result = run(one_item(item, scratch))
        fid = [s["mean_fid"] for s in result.get("per_frame_fid_scores", [])]
        clip = [s["mean_score"] for s in result.get("clip_scores", [])]
        theirs = {"fvd": result.get("fvd_score"), "fid": fid[0] if fid else None, "clipsim": clip[0] if clip else None}
        keys = COMPARED[subtask]
        agree += all(same(row.get(k), theirs[k]) for k in keys)
        if item.get("output"):
            videos += 1
            with inside(scratch):
                frames = module.extract_keyframes(item["output"], output_dir=str(scratch / f"keys{videos}"))
            same_keys += [re.findall(r"\d+", Path(f).stem)[-1] for f in frames] == [
                re.findall(r"\d+", Path(f).stem)[-1] for f in item["output2"]
            ]
    totals = run(scratch / "items.json")
    fid_values = [s["mean_fid"] for s in totals.get("per_frame_fid_scores", [])]
    values = {
        f"{subtask} FVD": totals.get("fvd_normalized"),
        f"{subtask} FID": float(np.mean(module.VideoMetricsCalculator.normalize_scores(fid_values)))
        if fid_values
        else None,
    }
    if subtask != "VP":
        values[f"{subtask} CLIPSIM"] = 100 * float(np.mean([s["mean_score"] for s in totals["clip_scores"]]))
    return agree, {**values, "key frames": f"{same_keys}/{videos}"}


def released_check(subtask: str, items: list[dict], rows: list[dict], scratch: Path, base: Path) -> tuple[int, dict]:
    (scratch / "items.json").write_text(json.dumps(items))
    if subtask in spec.UNDERSTANDING:
        return check_understanding(items, rows, scratch, base)
    if subtask in spec.UNIFY_QA:
        return check_unify(subtask, items, rows, scratch, base)
    if subtask == "VCoT":
        return check_vcot(items, rows, scratch, base)
    if subtask in spec.VIDEO:
        return check_video(subtask, items, rows, scratch, base)
    return check_image_generation(subtask, items, rows, scratch, base)


def video_parts(subtask: str, rows: list[dict]) -> dict[str, float]:
    """Our official normalised FVD, FID and CLIPSIM means of a video subtask (the parts of its score)."""
    means = feature_means(mu.task_features(subtask, rows, "official"))
    return {f"{subtask} {k.upper()}": float(v) for k, v in means.items()}


def rounded(values: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", type=Path, help="folder with the released evaluate/*.py (omit: our side only)")
    parser.add_argument("--n", type=int, default=6, help="generated items per subtask")
    parser.add_argument("--models", type=int, default=3, help="runs, each with its own mix of outputs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.released:
        sys.path.insert(0, str(args.released.resolve()))
    torch.set_grad_enabled(False)
    os.environ[METRICS_ENV] = json.dumps(TINY_METRICS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        os.environ[EXTRA_MEDIA_ROOTS_ENV] = os.pathsep.join(
            filter(None, [str(work), os.environ.get(EXTRA_MEDIA_ROOTS_ENV)])
        )
        with contextlib.redirect_stderr(io.StringIO()):  # the parquet writer's progress bars
            generate(work / "data", args.n, seed=args.seed)
        logged = write_runs(work / "data", work / "runs", args.models, random.Random(args.seed))
        report = export([work / "runs"], "mme_unify", work / "export", work / "data")
        print(f"export: {len(report.files)} files, {sum(report.failures.values())} failed samples written as failures")
        for subtask in spec.SUBTASKS:
            task = spec.task_name(subtask, "official")
            agree = total = 0
            for model, tasks in logged.items():
                folder = work / "export" / model / "mme_unify"
                items, rows = mme_export.read(folder)[task], tasks[task]
                assert [i["doc_id"] for i in items] == [r["doc_id"] for r in rows], task
                ours = video_parts(subtask, rows) if subtask in spec.VIDEO else official_scores(subtask, rows)
                line = f"{subtask} {model}: ours {rounded(ours)}"
                if args.released:
                    scratch = work / "scratch" / model / task
                    scratch.mkdir(parents=True)
                    agreeing, theirs = released_check(subtask, items, rows, scratch, folder)
                    agree, total = agree + agreeing, total + len(rows)
                    line += f"; released {rounded(theirs)}; {agreeing}/{len(rows)} samples agree"
                print(line, flush=True)
            if args.released:
                print(f"{subtask}: {agree}/{total} samples agree (our official vs the released script on our export)")


if __name__ == "__main__":
    main()
