"""Per-sample agreement of our MME-Unify ``official`` scorers with the released scripts, run side by side.

Usage: ``python bench/mme_unify_parity.py --released DIR [--n 15] [--seed 0]`` where DIR holds the released
``evaluate/*.py`` of aba122/MME-Unify (a checkout's ``evaluate`` folder; they are not part of this repo).

Both sides see the same generated items and outputs. The released scripts' ``transformers`` CLIP calls are
routed to our tiny random open_clip backbone, so both embed with the same weights: the check covers the
decision logic (failure rules, argmax and tie order, VCoT averaging, TIE/TIG resizing, skipped samples,
FVD/FID normalisation), not CLIP preprocessing or checkpoints. Results: docs/fidelity/mme_unify.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import torch
from PIL import Image

TINY = {"backbone": "tiny", "weights": "random"}
os.environ["LMMS_EVAL_UNIFY_MME_UNIFY_METRICS"] = json.dumps({"clip_choice": TINY, "clip_score": TINY})

from lmms_eval_unify.benchmarks.mme_unify import paper as mu  # noqa: E402
from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation  # noqa: E402
from lmms_eval_unify.benchmarks.mme_unify.offline import data  # noqa: E402
from lmms_eval_unify.benchmarks.mme_unify.scoring import (  # noqa: E402
    prompt_coordinates,
    score_unify_qa,
    score_vcot,
)
from lmms_eval_unify.metrics.clip import ClipBackbone, get_clip  # noqa: E402
from lmms_eval_unify.output.record import Step, UnifiedOutput  # noqa: E402
from lmms_eval_unify.scoring.samples import feature_means  # noqa: E402

OUTPUT_KINDS = ("copy0", "copy1", "copy2", "copy3", "missing", "corrupt", "none")
REFERENCE_KEYS = {
    "CSQ": ("image", "fake_image1", "fake_image2", "fake_image3"),
    "SD": ("img_diff_a", "img_diff_a_negative1", "img_diff_a_negative2", "img_diff_a_negative3"),
    "AL": tuple(f"image_Auxiliary_lines{s}" for s in ("", "_negative1", "_negative2", "_negative3")),
    "IEE": ("edited_image", "fake_image1", "fake_image2", "fake_image3"),
}
ROWS = {"CSQ": data.csq_rows, "SD": data.sd_rows, "AL": data.al_rows, "IEE": data.iee_rows}


# --- a transformers-shaped CLIP on our backbone -------------------------------------------------------------


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
        return SimpleNamespace(logits_per_image=self.clip.logit_scale * image @ text.T)


def released(name: str, family: str) -> ModuleType:
    """Import a released script with its CLIP classes replaced by the stand-ins on the ``family`` backbone."""
    module = importlib.import_module(name)
    model = type("Model", (StandInModel,), {"clip": get_clip(TINY, family)})
    module.CLIPModel, module.CLIPProcessor = model, StandInProcessor
    return module


def quiet(fn: Callable, *args: Any) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


# --- outputs ------------------------------------------------------------------------------------------------


def write_output(kind: str, image: Image.Image | None, out: Path, name: str) -> tuple[list[str], str]:
    """One output image of ``kind`` (``none``, ``missing``, ``corrupt`` or a picture): our record's image list
    (relative to ``out``) and the path the released scripts read."""
    if kind == "none":
        return [], ""
    if kind == "missing":
        return [f"{name}_gone.png"], str(out / f"{name}_gone.png")
    if kind == "corrupt":
        (out / f"{name}.png").write_bytes(b"not a PNG")
    else:
        image.save(out / f"{name}.png")
    return [f"{name}.png"], str(out / f"{name}.png")


def folders(work: Path, subtask: str) -> tuple[Path, Path]:
    base, out = work / subtask / "base", work / subtask / "out"
    base.mkdir(parents=True)
    out.mkdir(parents=True)
    return base, out


# --- unify QA -----------------------------------------------------------------------------------------------


def released_unify_pair(subtask: str, item: dict, work: Path, base: Path) -> tuple[float, float]:
    """(text correct, image correct) of one item by the released script of ``subtask``."""
    if subtask == "SD":
        module = released("Evaluate_SpotDiff", "clip_choice")
        text = module.evaluate_text_answer(item)[1]
        image = quiet(module.evaluate_image_prediction, item, module.CLIPModel(), StandInProcessor(), str(base))[1]
        return float(text), float(image)
    if subtask == "AL":
        module = released("Evaluate_Math_Geo", "clip_choice")
        module.IMAGE_BASE_PATH = str(base)
        evaluator = quiet(module.Evaluator)
        return float(evaluator._evaluate_choice(item)["correct"]), float(
            quiet(evaluator._evaluate_image, item)["correct"]
        )
    path = work / "one_item.json"
    path.write_text(json.dumps([item]))
    cwd = os.getcwd()
    os.chdir(work)  # both scripts write evaluation_results.json (CSQ next to its input, IEE in the cwd)
    try:
        if subtask == "IEE":
            result = quiet(released("Evaluate_IEE", "clip_choice").evaluate_results, str(path), str(base))
        else:
            args = SimpleNamespace(input_json=str(path), base_path=str(base))
            quiet(released("Evaluate_CS", "clip_choice").evaluate_results, args)
            result = json.loads((work / "evaluation_results.json").read_text())
    finally:
        os.chdir(cwd)
    return float(result["text_metrics"]["correct"]), float(result["image_metrics"]["correct"])


def released_unify_item(subtask: str, doc: dict, refs: dict, text: str, path: str) -> dict:
    """The released result-JSON item: ``text`` is the letter (CSQ/SD/AL) or the explanation (IEE)."""
    if subtask == "IEE":
        output = {"output_explanation": text, "output_image": path}
        return {"choice": doc["choice"], "answer": doc["answer"], "output": output, "data": refs}
    output = (
        {"selected_answer": text, "difference_image": path}
        if subtask == "SD"
        else {
            "output_choice": text,
            "output_image": path,
        }
    )
    return {"answer": doc["answer"], "output": output, "data": refs}


def check_unify_qa(subtask: str, n: int, work: Path, rng: random.Random) -> str:
    base, out = folders(work, subtask)
    agree, ours_sum, theirs_sum = 0, np.zeros(2), np.zeros(2)
    docs = ROWS[subtask](n, rng)
    for d, doc in enumerate(docs):
        refs = {}
        for key, image in zip(REFERENCE_KEYS[subtask], doc["candidates"], strict=True):
            image.save(base / f"{d}_{key}.png")
            refs[key] = f"{d}_{key}.png"
        for kind in OUTPUT_KINDS:
            picture = doc["candidates"][int(kind[-1])] if kind.startswith("copy") else None
            images, path = write_output(kind, picture, out, f"{d}_{kind}")
            if subtask == "IEE":
                answer = rng.choice(doc["choice"]).split(":", 1)[1].strip()
                text = f"Explanation: {answer}"
            else:
                answer = rng.choice("ABCD")
                text = f"Answer: {answer}"
            raw = UnifiedOutput("answer_and_image", text=text, images=images, root=str(out)).to_json()
            result = score_unify_qa(doc, raw, subtask, "official")
            ours = np.array([result["text_correct"], result["image_correct"]], dtype=float)
            theirs = np.array(
                released_unify_pair(subtask, released_unify_item(subtask, doc, refs, answer, path), work, base)
            )
            agree += bool((ours == theirs).all())
            ours_sum, theirs_sum = ours_sum + ours, theirs_sum + theirs
    total = len(docs) * len(OUTPUT_KINDS)
    means = f"released text/image {np.round(100 * theirs_sum / total, 2)}, ours {np.round(100 * ours_sum / total, 2)}"
    return f"{subtask}: {agree}/{total} items agree on text and image; {means}"


# --- VCoT ---------------------------------------------------------------------------------------------------


def check_vcot(n: int, work: Path, rng: random.Random) -> str:
    module = released("Evaluate_VSP", "clip_choice")
    evaluator = module.VisualCoTEvaluator.__new__(module.VisualCoTEvaluator)
    base, out = folders(work, "VCoT")
    evaluator.image_base_path, evaluator.device = str(base), "cpu"
    evaluator.model, evaluator.processor = module.CLIPModel(), StandInProcessor()
    samples, rows, agree = [], [], 0
    for d, doc in enumerate(data.vcot_rows(n, rng)):
        actions, coords = doc["actions"], [json.loads(c) for c in doc["coordinates"]]
        refs = {}
        for k, image in enumerate(doc["step_images"]):
            image.save(base / f"{d}_step{k}.png")
            refs[f"Step_{k}"] = f"{d}_step{k}.png"
        steps, outputs = [], {}
        for i in range(rng.choice([len(actions), len(actions), len(actions) - 1, 2, len(actions) + 1])):
            last = min(i, len(actions) - 1)
            action = actions[last] if rng.random() < 0.7 else rng.choice(["Up", "Down", "Left", "Right", "Finish"])
            location = rng.choice([coords[last], prompt_coordinates(doc)[last], [rng.randint(0, 5), rng.randint(0, 5)]])
            kind = rng.choice(["right", "right", "other", "initial", "missing", "corrupt", "none"])
            pool = doc["step_images"]
            picture = {
                "right": pool[min(i, len(pool) - 1)],
                "other": rng.choice(pool),
                "initial": doc["initial_image"],
            }
            images, path = write_output(kind, picture.get(kind), out, f"{d}_{i}")
            steps.append(
                Step(
                    text=f"Action: {action}\nLocation: [{location[0]}, {location[1]}]",
                    image=(images or [None])[0],
                )
            )
            outputs[f"output_step_{i}"] = {
                "output_action": action,
                "output_location": location,
                "output_image": path,
            }
        ours = score_vcot(doc, UnifiedOutput("visual_cot_steps", steps=steps, root=str(out)).to_json(), "official")
        sample = {
            "subcategory": doc["subcategory"],
            "data": {"Action": actions, "Coordinate": coords, **refs},
            "outputs": outputs,
        }
        theirs = quiet(evaluator.evaluate_sample, sample)["step_results"]
        theirs_counts = [sum(r[a]["correct"] for r in theirs) for a in ("action", "location", "image")]
        agree += [ours[f"{a}_steps_correct"] for a in ("action", "coordinate", "image")] == theirs_counts
        samples.append(sample)
        rows.append(ours)
    evaluator.results = samples
    accuracies = quiet(evaluator.calculate_accuracies)["overall"]["average_accuracies"]
    theirs = [round(accuracies[k]["avg_accuracy"], 4) for k in ("action", "location", "image", "overall")]
    row = mu.table2_row({mu.task_name("VCoT"): feature_means(mu.task_features("VCoT", rows, "official"))})
    ours = [round(row[k], 4) for k in ("VCoT Action", "VCoT Coordinate", "VCoT Image", "VCoT")]
    return f"VCoT: {agree}/{len(rows)} mazes agree on the three step counts; released {theirs}, ours {ours}"


# --- TIE / TIG ------------------------------------------------------------------------------------------------


def check_clip_scored(subtask: str, n: int, work: Path, rng: random.Random) -> str:
    module = released("Evaluate_Generation", "clip_score")
    evaluator = module.ImageEvaluator.__new__(module.ImageEvaluator)  # skips LPIPS (AlexNet weights offline)
    base, out = folders(work, subtask)
    evaluator.device, evaluator.base_path = "cpu", str(base)
    evaluator.clip_model, evaluator.clip_processor = module.CLIPModel(), StandInProcessor()
    agree, ours_rows, theirs_rows = 0, [], []
    for d, doc in enumerate(data.generation_rows(subtask, n, rng, work / subtask / "media")):
        reference = doc["edited_image" if subtask == "TIE" else "image"].convert("RGB")
        reference.save(base / f"{d}.png")
        kind = rng.choice(["resized", "resized", "noise", "same", "missing", "corrupt", "none"])
        size = (rng.randint(16, 3 * reference.width), rng.randint(16, 3 * reference.height))
        noise = np.random.default_rng(d).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
        picture = {"resized": reference.resize(size), "noise": Image.fromarray(noise), "same": reference}.get(kind)
        images, path = write_output(kind, picture, out, str(d))
        ours = score_generation(
            subtask, doc, UnifiedOutput("image_only", images=images, root=str(out)).to_json(), "official"
        )
        # main(): an empty output path is skipped; TIG's evaluate_generation adds only LPIPS to this CLIP code
        theirs = quiet(evaluator.evaluate_editing, path, f"{d}.png", doc["Text_Prompt"]) if path else None
        if theirs is None:
            agree += ours["clip_i"] is None
        else:
            theirs_rows.append(theirs)
            agree += ours["clip_i"] is not None and np.allclose(
                [ours["clip_i"], ours["clip_t"]], [theirs["clip_i"], theirs["clip_t"]], atol=1e-4
            )
        ours_rows.append(ours)
    released_score = (
        100 * np.mean([r["clip_i"] for r in theirs_rows]) + np.mean([r["clip_t"] for r in theirs_rows])
    ) / 2
    features = mu.task_features(subtask, ours_rows, "official")
    ours_score = mu.table2_row({mu.task_name(subtask): feature_means(features)})[subtask]
    return (
        f"{subtask}: {agree}/{len(ours_rows)} items agree (CLIP-I and CLIP-T within 1e-4, or both skipped); "
        f"released {released_score:.4f}, ours {ours_score:.4f}"
    )


def check_normalisation(trials: int, rng: np.random.Generator) -> str:
    normalise = importlib.import_module("Evaluate_Generation_Video").VideoMetricsCalculator.normalize_scores
    agree = 0
    for trial in range(trials):
        size = int(rng.integers(1, 20))
        raw = rng.uniform(0, 1500, size) if trial % 4 else np.full(size, rng.uniform(0, 3))
        ours = feature_means({"x": mu.released_normalised_fvd_fid(raw)})["x"]
        agree += bool(np.isclose(ours, np.mean(normalise(raw.tolist()))))
    return f"FVD/FID normalisation: {agree}/{trials} random sets agree"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", type=Path, required=True, help="folder with the released evaluate/*.py")
    parser.add_argument("--n", type=int, default=15, help="items per unify QA subtask (x7 outputs each)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(args.released.resolve()))
    torch.set_grad_enabled(False)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for subtask in ("CSQ", "SD", "AL", "IEE"):
            print(check_unify_qa(subtask, args.n, work, rng), flush=True)
        print(check_vcot(4 * args.n, work, rng), flush=True)
        for subtask in ("TIE", "TIG"):
            print(check_clip_scored(subtask, 3 * args.n, work, rng), flush=True)
        print(check_normalisation(200, np.random.default_rng(args.seed)))


if __name__ == "__main__":
    main()
