"""``lmms-eval-unify check-adapter NAME --model_args …``: a smoke test of one unified-model adapter.

It builds the model the way lmms-eval does (its registry, ``--model_args`` parsed by lmms-eval), then sends
one small generated sample through every protocol the adapter's capabilities claim, by the same request
path as an evaluation (protocol dispatch, media folder, output record), and prints one row per protocol:
ok or failed, seconds, and what came out. Exit status: 0 when every claimed protocol works, 1 when any
fails, 2 when the model cannot be built. ``--parity B --parity_args …`` compares the adapter with another one
instead (:mod:`lmms_eval_unify.generation.parity`): exit 0 within the thresholds, 1 beyond them, 2 when either
model or a metric backbone cannot be built; a JSON report is written as ``parity.json`` in the output folder.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from lmms_eval_unify.generation.answer_spaces import FixedPlan
from lmms_eval_unify.generation.primitives import UNDERSTAND
from lmms_eval_unify.generation.protocols import PROTOCOLS
from lmms_eval_unify.output.media_reader import load_media
from lmms_eval_unify.output.record import OutputFailure, parse_output
from lmms_eval_unify.writes import write_text

SAMPLE_TASK, SAMPLE_SPLIT = "check_adapter", "test"

PROMPTS = {
    "direct": "What colour is the square in the image? Answer with one word.",
    "answer_and_image": "Describe the image in one sentence, then draw it.",
    "image_only": "Draw a blue circle on a white background.",
    "generate_then_answer": (
        "[GEN_PROMPT]Draw the image with the square coloured blue.[/GEN_PROMPT]"
        "[QUESTION]What colour is the square now?[/QUESTION]"
    ),
    "visual_cot_steps": "Move the square one cell to the right.",
    "image_sequence_then_answer": "Move the square one cell to the right, then say where it is.",
    "video": "The square slides to the right.",
}
"""One prompt per protocol (every protocol of ``lmms_eval_unify.generation.protocols`` has one: a test checks it)."""

OPTIONS = {
    "visual_cot_steps": {"max_steps": 1},
    "image_sequence_then_answer": {"max_steps": 1},
}
"""Protocol options keeping the step loops to one step."""

EXPECTED_IMAGES = {"answer_and_image": 1, "image_only": 1, "generate_then_answer": 1}
"""Protocols with a fixed number of output images (a step loop may stop before drawing)."""


def sample_image() -> Image.Image:
    """The sample's input: a red square on a white 64×64 canvas."""
    image = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(image).rectangle((16, 16, 40, 40), fill="red")
    return image


@dataclass(frozen=True)
class SmokeAnswers:
    """What the baseline instruments answer here: "red", the input image, three frames of it."""

    def plan(self, doc: dict, inputs: list[Image.Image], rng: Any, oracle: bool) -> SmokePlan:
        return SmokePlan("red", doc["image"])


class SmokePlan(FixedPlan):
    def video(self, phase: Any) -> list[Image.Image]:
        return [self.image(phase)] * 3


SMOKE_ANSWERS = SmokeAnswers()


@dataclass
class ProtocolCheck:
    """The outcome of one protocol on the sample."""

    protocol: str
    ok: bool
    seconds: float
    cpu_seconds: float
    summary: str


def _doc_to_visual(doc: dict) -> list[Image.Image]:
    return [doc["image"]]


def _summary(protocol: str, text: str, images: list[Image.Image], frames: int) -> str:
    """Text length (for protocols that answer in text), image count and sizes, video frames."""
    parts = []
    if UNDERSTAND in PROTOCOLS[protocol].needs:
        parts.append(f"text {len(text)} chars" + (" (empty)" if not text.strip() else ""))
    if images:
        sizes = sorted({f"{image.width}x{image.height}" for image in images})
        parts.append(f"{len(images)} image(s) {', '.join(sizes)}")
    if frames:
        parts.append(f"{frames} video frame(s)")
    return "; ".join(parts)


def check_protocol(model: Any, protocol: str, doc_id: int, max_new_tokens: int) -> ProtocolCheck:
    """Run ``protocol`` on the sample through ``model.generate_until`` and judge what comes back."""
    gen_kwargs = {
        "protocol": protocol,
        "max_new_tokens": max_new_tokens,
        "answer_space": f"{__name__}:SMOKE_ANSWERS",
        **OPTIONS.get(protocol, {}),
    }
    request = Instance(
        request_type="generate_until",
        arguments=(PROMPTS[protocol], gen_kwargs, _doc_to_visual, doc_id, SAMPLE_TASK, SAMPLE_SPLIT),
        idx=0,
        metadata={"task": SAMPLE_TASK, "doc_id": doc_id, "repeats": 1},
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        raw, crash = model.generate_until([request])[0], ""
    except Exception as exc:  # noqa: BLE001 - a crash outside the per-request guard is this check's finding
        raw, crash = None, f"generate_until raised {type(exc).__name__}: {exc}"
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started

    def failed(reason: str) -> ProtocolCheck:
        return ProtocolCheck(protocol, False, seconds, cpu_seconds, reason)

    if raw is None:
        return failed(crash)
    parsed = parse_output(raw)
    record = parsed.record
    if parsed.failure is not None:
        detail = record.error or parsed.failure.detail
        return failed(f"{parsed.failure.reason}: {detail}")
    if record.unsupported:
        return failed(f"claimed but unsupported: {record.unsupported}")
    images = parsed.load_images(EXPECTED_IMAGES.get(protocol))
    if isinstance(images, OutputFailure):
        return failed(f"{images.reason}: {images.detail}")
    frames = load_media(record.root, record.video_frames)
    if isinstance(frames, OutputFailure):
        return failed(f"{frames.reason}: {frames.detail}")
    if protocol == "video" and not frames:
        return failed("no video frames saved")
    return ProtocolCheck(protocol, True, seconds, cpu_seconds, _summary(protocol, record.text, images, len(frames)))


class ModelNotReady(RuntimeError):
    """The adapter's declared check (``UnifiedModel.missing``) found what the model lacks; nothing was built."""


def build_model(name: str, model_args: str, output_dir: str) -> Any:
    """The adapter ``name`` as lmms-eval builds it, writing under ``output_dir`` and never resuming, once its
    declared check finds nothing missing (else ``ModelNotReady`` lists every missing piece with its fix)."""
    from lmms_eval.models import get_model
    from lmms_eval.utils import simple_parse_args_string

    from lmms_eval_unify.generation.readiness import model_missing
    from lmms_eval_unify.integration.model import UnifiedModel

    cls = get_model(name, force_simple=True)
    if not (isinstance(cls, type) and issubclass(cls, UnifiedModel)):
        raise TypeError(f"{name} is not a unified-model adapter (lmms_eval_unify.integration.model.UnifiedModel)")
    args = {"output_dir": output_dir, "resume": False, **simple_parse_args_string(model_args)}
    missing = model_missing(cls, args)
    if missing:
        lines = [f"\n  [{m.kind}] {m.what}\n      fix: {m.fix}" for m in missing]
        raise ModelNotReady(f"{len(missing)} thing(s) missing, nothing was loaded:{''.join(lines)}")
    return cls(**args)


def run_checks(model: Any, max_new_tokens: int) -> list[ProtocolCheck]:
    """Every protocol the model's capabilities claim, one sample each."""
    claimed = [name for name, spec in PROTOCOLS.items() if spec.needs <= model.capabilities]
    model.task_dict = {SAMPLE_TASK: {SAMPLE_SPLIT: {i: {"image": sample_image()} for i in range(len(claimed))}}}
    return [check_protocol(model, protocol, i, max_new_tokens) for i, protocol in enumerate(claimed)]


def format_table(checks: list[ProtocolCheck]) -> str:
    rows = [("protocol", "result", "seconds", "cpu s", "output")]
    rows += [
        (c.protocol, "ok" if c.ok else "FAILED", f"{c.seconds:.2f}", f"{c.cpu_seconds:.2f}", c.summary) for c in checks
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    )


def parity_main(options: argparse.Namespace, output_dir: Path) -> int:
    """``--parity B``: the same generated samples and seeds through both adapters, compared
    (:mod:`lmms_eval_unify.generation.parity`); exit 0 within the thresholds, 1 beyond them, 2 when a model or a
    metric backbone cannot be built."""
    from lmms_eval_unify import metrics
    from lmms_eval_unify.generation.parity import Thresholds, format_parity, outcome_row, run_parity

    built = []
    for side, name, model_args in (("A", options.name, options.model_args), ("B", options.parity, options.parity_args)):
        try:
            built.append(build_model(name, model_args, str(output_dir / side)))
        except Exception as exc:  # noqa: BLE001 - any construction failure is reported, not raised
            print(f"{name} ({side}): cannot build the model: {type(exc).__name__}: {exc}")
            return 2
    model_a, model_b = built
    if model_a.seed != model_b.seed:
        print(f"the two adapters draw different per-sample seeds (seed={model_a.seed} and seed={model_b.seed}); "
              "give both the same seed")  # fmt: skip
        return 2
    thresholds = Thresholds(options.min_answer_agreement, options.max_dreamsim, options.max_lpips)
    print(f"parity of {options.name} (A) and {options.parity} (B) on {options.samples} samples, seed {model_a.seed}")
    try:
        outcomes, verdict = run_parity(
            model_a,
            model_b,
            options.samples,
            f"{__name__}:SMOKE_ANSWERS",
            metrics.dreamsim_distance,
            metrics.lpips_distance,
            thresholds,
        )
    except (metrics.MissingWeightsError, ValueError) as exc:
        print(f"cannot compare: {type(exc).__name__}: {exc}")
        return 2
    print(format_parity(outcomes, verdict, thresholds))
    report = output_dir / "parity.json"
    document = {
        "a": {"model": options.name, "describe": model_a.describe()},
        "b": {"model": options.parity, "describe": model_b.describe()},
        "thresholds": asdict(thresholds),
        "verdict": verdict.to_dict(),
        "outcomes": [outcome_row(o) for o in outcomes],
    }
    write_text(report, json.dumps(document, indent=1, default=str), output_dir)
    print(f"report: {report}; outputs under {model_a.media.root} and {model_b.media.root}")
    return 0 if verdict.passed else 1


def main(argv: list[str]) -> int:
    from lmms_eval_unify.generation.parity import DEFAULT_THRESHOLDS as DEFAULT

    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify check-adapter",
        description="Smoke-test a unified-model adapter: one sample of each protocol it claims; with --parity, "
        "compare its outputs with another adapter's on the same samples and seeds.",
    )
    parser.add_argument("name", help="the --model name (e.g. janus_pro, unify_oracle)")
    parser.add_argument("--model_args", default="", help="as for lmms-eval, e.g. pretrained=PATH,dtype=float32")
    parser.add_argument("--max_new_tokens", type=int, default=32, help="text budget per answer")
    parser.add_argument("--output_dir", help="media folder (default: a new temporary folder)")
    parity = parser.add_argument_group("serving parity (docs/models/README.md#serving-parity)")
    parity.add_argument("--parity", metavar="B", help="the adapter to compare with (e.g. openai_image)")
    parity.add_argument("--parity_args", default="", help="B's --model_args")
    parity.add_argument("--samples", type=int, default=4, help="generated samples (default %(default)s)")
    parity.add_argument("--min_answer_agreement", type=float, default=DEFAULT.min_answer_agreement)
    parity.add_argument("--max_dreamsim", type=float, default=DEFAULT.max_dreamsim, help="mean over image pairs")
    parity.add_argument("--max_lpips", type=float, default=DEFAULT.max_lpips, help="mean over image pairs")
    options = parser.parse_args(argv)
    if options.samples < 1:
        parser.error(f"--samples must be at least 1, got {options.samples}")
    output_dir = options.output_dir or tempfile.mkdtemp(prefix="check_adapter_")
    if options.parity:
        return parity_main(options, Path(output_dir))
    started = time.perf_counter()
    try:
        model = build_model(options.name, options.model_args, output_dir)
    except Exception as exc:  # noqa: BLE001 - any construction failure is reported, not raised
        print(f"{options.name}: cannot build the model: {type(exc).__name__}: {exc}")
        return 2
    print(
        f"{options.name}: built in {time.perf_counter() - started:.1f} s on {model.device} ({model.dtype}); "
        f"capabilities: {', '.join(sorted(model.capabilities))}"
    )
    checks = run_checks(model, options.max_new_tokens)
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print(f"outputs under {model.media.root}")
    if failed:
        print(f"{len(failed)} of {len(checks)} claimed protocols failed: {', '.join(c.protocol for c in failed)}")
        return 1
    print(f"all {len(checks)} claimed protocols work")
    return 0
