"""qwen_image_edit against the model card's own call of diffusers' ``QwenImageEditPipeline``.

The reference is the example of the Qwen/Qwen-Image-Edit model card: ``pipeline(image=..., prompt=...,
generator=torch.manual_seed(seed), true_cfg_scale=4.0, negative_prompt=" ", num_inference_steps=50)`` under
``torch.inference_mode()`` (bf16 on CUDA there; here both sides run the same dtype on the same device). Ours is the
adapter's ``generate_image``, which batches its items as lists with one generator each. Both load one tiny random
pipeline built from the real diffusers/transformers classes (tests/model_adapters/tiny_models.py), with a few
steps instead of 50 (a size change only: the step count is passed to both sides).

    python bench/parity/qwen_image_edit.py [--work DIR] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "model_adapters"))

import tiny_models  # noqa: E402

_COMMON = importlib.util.spec_from_file_location("parity_common", Path(__file__).resolve().with_name("common.py"))
common = sys.modules[_COMMON.name] = importlib.util.module_from_spec(_COMMON)  # loaded by path: see common.py
_COMMON.loader.exec_module(common)

STEPS, SEED, PROMPT = 2, 7, "turn the square blue"
DEFAULTS = {"true_cfg_scale": 4.0, "negative_prompt": " ", "num_inference_steps": 50}
"""The model card's call settings."""


def input_image() -> Image.Image:
    """A small test picture (a red square on grey)."""
    picture = Image.new("RGB", (48, 40), (128, 128, 128))
    picture.paste((200, 30, 30), (10, 8, 30, 28))
    return picture


def model_card_call(pipeline: Any, image: Image.Image, prompt: str, seed: int, steps: int) -> np.ndarray:
    """The model card's example, with ``num_inference_steps`` set to ``steps``."""
    with torch.inference_mode():
        output = pipeline(
            image=image,
            prompt=prompt,
            generator=torch.manual_seed(seed),
            true_cfg_scale=DEFAULTS["true_cfg_scale"],
            negative_prompt=DEFAULTS["negative_prompt"],
            num_inference_steps=steps,
        )
    return np.asarray(output.images[0])


def checks(official: Path | None, work: Path, env: str | None, device: str = "cpu") -> list[tuple[str, bool, str]]:
    """The adapter's defaults against the model card's, and its edit against the model card's call, pixel for
    pixel (``official`` and ``env`` are unused: the reference is the pipeline of the installed diffusers)."""
    from diffusers import QwenImageEditPipeline
    from lmms_eval_unify.model_adapters.qwen_image_edit import QwenImageEdit, QwenImageEditSettings

    folder = work / "tiny_qwen_image_edit"
    if not (folder / "model_index.json").is_file():
        tiny_models.write_tiny_qwen_image_edit(folder)
    results = []
    settings = QwenImageEditSettings()
    for name, expected in DEFAULTS.items():
        ours = getattr(settings, name)
        results.append((f"default {name}", ours == expected, f"ours {ours!r}, model card {expected!r}"))
    dtype = torch.float32
    pipeline = QwenImageEditPipeline.from_pretrained(folder, dtype=dtype).to(device)
    pipeline.set_progress_bar_config(disable=True)
    reference = model_card_call(pipeline, input_image(), PROMPT, SEED, STEPS)
    adapter = QwenImageEdit(
        pretrained=str(folder),
        num_inference_steps=STEPS,
        device=device,
        dtype="float32",
        output_dir=str(work / "outputs"),
    )
    ours = np.asarray(adapter.generate_image(PROMPT, [input_image()], seed=SEED))
    same = ours.shape == reference.shape and np.array_equal(ours, reference)
    detail = f"shape {ours.shape}" + ("" if same else f" vs {reference.shape}; {difference(ours, reference)}")
    results.append(("edit image (pixels)", same, detail))
    return results


def difference(ours: np.ndarray, reference: np.ndarray) -> str:
    """The largest absolute pixel difference, or the shape mismatch."""
    if ours.shape != reference.shape:
        return "different shapes"
    return f"max |diff| {int(np.abs(ours.astype(int) - reference.astype(int)).max())}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--official", type=Path, help="unused: the reference is the installed diffusers pipeline")
    parser.add_argument("--env", help="unused: the adapter runs in this environment")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        results = checks(None, args.work or Path(scratch), None, args.device)
    for name, same, detail in results:
        print(f"{'identical' if same else 'DIFFERENT':10} {name:32} {detail}")
    print(common.verdict("qwen_image_edit", results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
