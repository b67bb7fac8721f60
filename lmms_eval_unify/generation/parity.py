"""``check-adapter A --parity B``: do two adapters of the same weights give the same outputs?

The typical pair is a model's official code and a server of the same weights (``bagel`` and ``openai_image``
against vLLM-Omni), or two releases of one serving engine. Both adapters get the same generated samples through
the evaluation's request path with the same per-sample seeds (the ``seed`` model argument of both must agree):
per sample one question about an image (protocol ``direct``), one drawing from text and one edit of that image
(protocol ``image_only``), each part only where both adapters claim the primitive. Answers agree when they are
equal after :func:`normalised_answer`; image pairs are compared by DreamSim and LPIPS (the shared metric
backbones: real weights, or the tiny random ones under ``LMMS_EVAL_UNIFY_TINY_METRICS=1`` for trials). The
check fails above :data:`DEFAULT_THRESHOLDS` (docs/models/README.md#serving-parity says how they were chosen) or
when any request fails on either side.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lmms_eval.api.instance import Instance
from PIL import Image, ImageDraw

from lmms_eval_unify.generation.primitives import GENERATE_IMAGE, UNDERSTAND
from lmms_eval_unify.output.record import OutputFailure, parse_output

PARITY_TASK, PARITY_SPLIT = "check_adapter_parity", "test"
COLOURS = ("red", "blue", "green", "yellow", "purple", "orange", "black", "cyan")
SHAPES = ("square", "circle")


@dataclass(frozen=True)
class Thresholds:
    """Where parity ends: the least share of agreeing answers and the largest mean image distances."""

    min_answer_agreement: float = 0.9
    max_dreamsim: float = 0.15
    max_lpips: float = 0.3


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class ParitySample:
    """One generated sample: an image, a question about it, a picture to draw from text and an edit of it."""

    index: int
    image: Image.Image
    question: str
    drawing: str
    edit: str


def parity_samples(n: int) -> list[ParitySample]:
    """``n`` samples, each a coloured shape on white (128x128) with its three prompts; the same on every call."""
    samples = []
    for index in range(n):
        colour, shape = COLOURS[index % len(COLOURS)], SHAPES[(index // len(COLOURS)) % len(SHAPES)]
        image = Image.new("RGB", (128, 128), "white")
        draw = ImageDraw.Draw(image)
        box = (32 + 4 * (index % 5), 32, 96, 96 - 4 * (index % 3))
        draw.rectangle(box, fill=colour) if shape == "square" else draw.ellipse(box, fill=colour)
        other = COLOURS[(index + 3) % len(COLOURS)]
        samples.append(
            ParitySample(
                index,
                image,
                f"What colour is the {shape} in the image? Answer with one word.",
                f"Draw a {colour} {shape} in the middle of a white background.",
                f"Make the {shape} {other} and keep everything else as it is.",
            )
        )
    return samples


PARTS = ("answer", "drawing", "edit")
"""What each sample asks: ``answer`` needs understanding, ``drawing`` and ``edit`` image generation."""
PART_NEEDS = {"answer": UNDERSTAND, "drawing": GENERATE_IMAGE, "edit": GENERATE_IMAGE}


def compared_parts(capabilities_a: frozenset[str], capabilities_b: frozenset[str]) -> list[str]:
    """The parts both adapters can do."""
    return [part for part in PARTS if PART_NEEDS[part] in capabilities_a & capabilities_b]


def parity_requests(samples: Sequence[ParitySample], parts: Sequence[str], answer_space: str) -> list[Instance]:
    """One request per sample and part, doc ids ``PARTS.index(part) * len(samples) + index`` (each its own seed)."""
    requests = []
    for part in parts:
        for sample in samples:
            doc_id = PARTS.index(part) * len(samples) + sample.index
            prompt = {"answer": sample.question, "drawing": sample.drawing, "edit": sample.edit}[part]
            protocol = "direct" if part == "answer" else "image_only"
            gen_kwargs = {"protocol": protocol, "max_new_tokens": 16, "answer_space": answer_space}
            requests.append(
                Instance(
                    request_type="generate_until",
                    arguments=(prompt, gen_kwargs, _inputs, doc_id, PARITY_TASK, PARITY_SPLIT),
                    idx=0,
                    metadata={"task": PARITY_TASK, "doc_id": doc_id, "repeats": 1},
                )
            )
    return requests


def _inputs(doc: dict) -> list[Image.Image]:
    return doc["inputs"]


def parity_docs(samples: Sequence[ParitySample]) -> dict[int, dict[str, Any]]:
    """The documents of :func:`parity_requests` (``inputs``: the sample's image for answers and edits, none for
    drawings; ``image``: what the baseline instruments answer with)."""
    docs = {}
    for part_index, part in enumerate(PARTS):
        for sample in samples:
            inputs = [] if part == "drawing" else [sample.image]
            docs[part_index * len(samples) + sample.index] = {"image": sample.image, "inputs": inputs}
    return docs


_SPACES = re.compile(r"\s+")


def normalised_answer(text: str) -> str:
    """An answer as compared: lower case, whitespace collapsed, surrounding punctuation and quotes dropped."""
    return _SPACES.sub(" ", text).strip().strip(".,;:!?\"'`*").strip().lower()


@dataclass
class PairOutcome:
    """One request on both sides: the answers or the images, or why a side failed."""

    part: str
    index: int
    answers: tuple[str, str] | None = None
    images: tuple[Image.Image, Image.Image] | None = field(default=None, repr=False)
    failure: str = ""
    agree: bool | None = None
    dreamsim: float | None = None
    lpips: float | None = None


def pair_outcome(part: str, index: int, raw_a: str, raw_b: str) -> PairOutcome:
    """Read both sides' records: an answer pair (and whether it agrees) or an image pair, or the failure."""
    outcome = PairOutcome(part, index)
    texts: list[str] = []
    pictures: list[Image.Image] = []
    for name, raw in (("A", raw_a), ("B", raw_b)):
        parsed = parse_output(raw)
        problem = parsed.failure.detail if parsed.failure else parsed.record.error or parsed.record.unsupported
        if problem:
            outcome.failure = f"{name}: {problem}"
            return outcome
        if part == "answer":
            texts.append(parsed.record.text)
            continue
        images = parsed.load_images(1)
        if isinstance(images, OutputFailure):
            outcome.failure = f"{name}: {images.reason}: {images.detail}"
            return outcome
        pictures.append(images[0])
    if part == "answer":
        outcome.answers = (texts[0], texts[1])
        outcome.agree = normalised_answer(texts[0]) == normalised_answer(texts[1])
    else:
        outcome.images = (pictures[0], pictures[1])
    return outcome


Distance = Callable[[Sequence[Image.Image], Sequence[Image.Image]], Sequence[float]]


def measure_images(outcomes: Sequence[PairOutcome], dreamsim: Distance, lpips: Distance) -> None:
    """Fill in the DreamSim and LPIPS distance of every image pair, in one batch per metric."""
    pairs = [outcome for outcome in outcomes if outcome.images is not None]
    if not pairs:
        return
    first = [outcome.images[0] for outcome in pairs if outcome.images]
    second = [outcome.images[1] for outcome in pairs if outcome.images]
    for outcome, d, lp in zip(pairs, dreamsim(first, second), lpips(first, second), strict=True):
        outcome.dreamsim, outcome.lpips = float(d), float(lp)


@dataclass(frozen=True)
class ParityVerdict:
    """The summary of a parity check and what it exceeded."""

    answers: int
    agreeing: int
    image_pairs: int
    dreamsim_mean: float | None
    dreamsim_max: float | None
    lpips_mean: float | None
    lpips_max: float | None
    failed: int
    exceeded: list[str]

    @property
    def passed(self) -> bool:
        return not self.exceeded

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


def parity_verdict(outcomes: Sequence[PairOutcome], thresholds: Thresholds) -> ParityVerdict:
    """Agreement, distances and every threshold exceeded (a failed request on either side always counts)."""
    answers = [o for o in outcomes if o.agree is not None]
    agreeing = sum(1 for o in answers if o.agree)
    dreamsim = [o.dreamsim for o in outcomes if o.dreamsim is not None]
    lpips = [o.lpips for o in outcomes if o.lpips is not None]
    failed = sum(1 for o in outcomes if o.failure)
    exceeded = []
    if failed:
        exceeded.append(f"{failed} request(s) failed on a side")
    if answers and agreeing / len(answers) < thresholds.min_answer_agreement:
        exceeded.append(f"answer agreement {agreeing}/{len(answers)} below {thresholds.min_answer_agreement:.0%}")
    for name, values, limit in (
        ("DreamSim", dreamsim, thresholds.max_dreamsim),
        ("LPIPS", lpips, thresholds.max_lpips),
    ):
        if values and statistics.fmean(values) > limit:
            exceeded.append(f"mean {name} {statistics.fmean(values):.4f} above {limit:g}")
    return ParityVerdict(
        len(answers),
        agreeing,
        len(dreamsim),
        statistics.fmean(dreamsim) if dreamsim else None,
        max(dreamsim) if dreamsim else None,
        statistics.fmean(lpips) if lpips else None,
        max(lpips) if lpips else None,
        failed,
        exceeded,
    )


def outcome_row(outcome: PairOutcome) -> dict[str, Any]:
    """One outcome as JSON data (images left out: they are in both adapters' media folders)."""
    row = asdict(outcome)
    row.pop("images")
    return row


def run_parity(
    model_a: Any,
    model_b: Any,
    n: int,
    answer_space: str,
    dreamsim: Distance,
    lpips: Distance,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> tuple[list[PairOutcome], ParityVerdict]:
    """Send the same ``n`` samples through both built adapters (their evaluation path) and compare them."""
    parts = compared_parts(model_a.capabilities, model_b.capabilities)
    if not parts:
        raise ValueError("the two adapters share no primitive to compare (understanding or image generation)")
    samples = parity_samples(n)
    docs = parity_docs(samples)
    responses = []
    for model in (model_a, model_b):
        model.task_dict = {PARITY_TASK: {PARITY_SPLIT: docs}}
        responses.append(model.generate_until(parity_requests(samples, parts, answer_space)))
    keys = [(part, sample.index) for part in parts for sample in samples]
    outcomes = [pair_outcome(part, index, a, b) for (part, index), a, b in zip(keys, *responses, strict=True)]
    measure_images(outcomes, dreamsim, lpips)
    return outcomes, parity_verdict(outcomes, thresholds)


def format_parity(outcomes: Sequence[PairOutcome], verdict: ParityVerdict, thresholds: Thresholds) -> str:
    """A per-request table, then the summary against the thresholds."""
    lines = ["part     sample  result"]
    for o in outcomes:
        if o.failure:
            result = f"FAILED {o.failure}"
        elif o.answers is not None:
            result = f"{'agree' if o.agree else 'DIFFER'}: {o.answers[0][:40]!r} / {o.answers[1][:40]!r}"
        else:
            result = f"DreamSim {o.dreamsim:.4f}  LPIPS {o.lpips:.4f}"
        lines.append(f"{o.part:<8} {o.index:>6}  {result}")
    if verdict.answers:
        lines.append(
            f"answers: {verdict.agreeing}/{verdict.answers} agree "
            f"(at least {thresholds.min_answer_agreement:.0%} required)"
        )
    if verdict.image_pairs:
        lines.append(
            f"images: {verdict.image_pairs} pairs; DreamSim mean {verdict.dreamsim_mean:.4f} max "
            f"{verdict.dreamsim_max:.4f} (at most {thresholds.max_dreamsim:g}); LPIPS mean {verdict.lpips_mean:.4f} "
            f"max {verdict.lpips_max:.4f} (at most {thresholds.max_lpips:g})"
        )
    lines.append("parity: PASSED" if verdict.passed else f"parity: FAILED: {'; '.join(verdict.exceeded)}")
    return "\n".join(lines)
