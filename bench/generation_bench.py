"""End-to-end samples/s of a real ``lmms-eval`` run at ``--batch_size`` B vs 1, with a tiny random model.

    python bench/generation_bench.py [--model janus_pro|emu3] [--batch 8] [--n 16]
                                     [--tasks unig2u_attr_appr_gta,uni_mmmu_maze]

The tiny checkpoint (tests/model_adapters/tiny_models.py) and offline data are written to a temp folder;
each configuration runs the real CLI with resume off, so both sides generate every sample. Wall time
includes the process start, model load and scoring, i.e. it is what a user waits for.
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="janus_pro", choices=sorted(WRITERS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--n", type=int, default=16, help="samples per task (--limit)")
    parser.add_argument("--tasks", default="unig2u_attr_appr_gta,uni_mmmu_maze")
    args = parser.parse_args()
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
            print(
                f"| {task} | tiny {args.model} | {args.n / one:.2f} | {args.n / many:.2f} | {one / many:.2f} |"
            )


if __name__ == "__main__":
    main()
