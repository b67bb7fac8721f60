"""Batched image generation, end to end and at the primitive.

End to end (default): samples/s of a real ``lmms-eval`` run at ``--batch_size`` B vs 1, with a tiny random
model. The tiny checkpoint (tests/model_adapters/tiny_models.py) and offline data are written to a temp
folder; each configuration runs the real CLI with resume off, so both sides generate every sample. Wall time
includes the process start, model load and scoring, i.e. it is what a user waits for.

    python bench/generation_bench.py [--model janus_pro|emu3] [--batch 8] [--n 16]
                                     [--tasks unig2u_attr_appr_gta,uni_mmmu_maze]

Primitive (``--primitive``): img/s of the janus_pro adapter's ``generate_image_batch`` in chunks of B vs
one image per call, in one process (after a warm-up on CUDA), and how many batched images equal their
one-by-one image. ``--shape janus-pro-1b`` writes the full-size architecture with random weights (1.87 B parameters,
576 image tokens per 384 px image; ~4 GB in bf16) for a GPU:

    python bench/generation_bench.py --primitive --shape janus-pro-1b --device cuda --batch 16 --images 32
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "model_adapters"))

import tiny_models  # noqa: E402

WRITERS = {"janus_pro": tiny_models.write_tiny_janus, "emu3": tiny_models.write_tiny_emu3}
EXTRA_ARGS = {"janus_pro": "", "emu3": ",pretrained_gen={checkpoint},image_area=256"}


def run(model: str, checkpoint: Path, tasks: str, batch: int, n: int, data: Path, out: Path) -> float:
    env = {
        **os.environ,
        "LMMS_EVAL_UNIFY_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    command = [sys.executable, "-m", "lmms_eval", "--model", model, "--tasks", tasks, "--limit", str(n),
               "--model_args", f"pretrained={checkpoint},max_new_tokens=8,resume=false"
               + EXTRA_ARGS[model].format(checkpoint=checkpoint),
               "--batch_size", str(batch), "--output_path", str(out), "--verbosity", "WARNING"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{model} on {tasks} (batch {batch}) failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


PROMPTS = ("a red cube on a table", "a maze with a blue dot", "two cats", "a green goal frame", "a chart")


def primitive_rates(shape: str, device: str, batch: int, images: int, root: Path) -> str:
    """janus_pro ``generate_image_batch``: img/s batched (chunks of ``batch``) and one by one, and the
    agreement of the two (each request keeps its seed)."""
    import numpy as np
    import torch
    from lmms_eval_unify.model_adapters.janus_pro import JanusPro

    checkpoint = tiny_models.write_tiny_janus(root / "model", shape=shape)
    model = JanusPro(pretrained=str(checkpoint), device=device, output_dir=str(root / "out"))
    requests = [(PROMPTS[i % len(PROMPTS)], [], {"seed": i}) for i in range(images)]

    def timed(chunk: int) -> tuple[float, list]:
        if device.startswith("cuda"):  # warm-up: kernels, allocator, autotuning
            model.generate_image_batch(requests[:chunk])
            torch.cuda.synchronize()
        started = time.perf_counter()
        out = [image for i in range(0, images, chunk) for image in model.generate_image_batch(requests[i : i + chunk])]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - started, out

    one_s, singles = timed(1)
    many_s, batched = timed(batch)
    diffs = [
        np.abs(np.asarray(a, dtype=int) - np.asarray(b, dtype=int)).max() for a, b in zip(batched, singles, strict=True)
    ]
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    return (
        f"janus_pro {shape} on {name} ({model.dtype}), {images} images of {singles[0].size[0]} px: "
        f"batch 1 {images / one_s:.3g} img/s ({one_s / images:.3g} s/img), "
        f"batch {batch} {images / many_s:.3g} img/s ({many_s / images:.3g} s/img), "
        f"ratio {one_s / many_s:.2f}; batched == one-by-one for {sum(d == 0 for d in diffs)}/{images} images "
        f"(max pixel difference {max(diffs)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="janus_pro", choices=sorted(WRITERS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--n", type=int, default=16, help="samples per task (--limit)")
    parser.add_argument("--tasks", default="unig2u_attr_appr_gta,uni_mmmu_maze")
    parser.add_argument("--primitive", action="store_true", help="time generate_image_batch in-process")
    parser.add_argument("--shape", choices=("tiny", "janus-pro-1b"), default="tiny", help="with --primitive")
    parser.add_argument("--device", default="cpu", help="with --primitive")
    parser.add_argument("--images", type=int, default=32, help="with --primitive")
    args = parser.parse_args()
    if args.primitive:
        with tempfile.TemporaryDirectory() as tmp:
            print(primitive_rates(args.shape, args.device, args.batch, args.images, Path(tmp)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        checkpoint = WRITERS[args.model](root / "model")
        data = root / "data"
        subprocess.run([sys.executable, "-m", "lmms_eval_unify.cli", "data", "generate", "uni_mmmu", "unig2u",
                        "--out", str(data), "--n", str(args.n)], check=True, capture_output=True)  # fmt: skip
        print(f"| task | model | batch 1 samples/s | batch {args.batch} samples/s | ratio |")
        print("|---|---|---:|---:|---:|")
        for task in args.tasks.split(","):
            one = run(args.model, checkpoint, task, 1, args.n, data, root / f"out1_{task}")
            many = run(args.model, checkpoint, task, args.batch, args.n, data, root / f"outB_{task}")
            print(f"| {task} | tiny {args.model} | {args.n / one:.2f} | {args.n / many:.2f} | {one / many:.2f} |")


if __name__ == "__main__":
    main()
