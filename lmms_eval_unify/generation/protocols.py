"""Protocols: how a task's request is turned into calls of a model's primitives.

A task names its protocol in ``generation_kwargs`` (key ``protocol``). Adapters implement only the
primitives ``understand`` and ``generate_image`` (optionally ``generate_video``, and batched variants);
every protocol is written once here, as a generator of primitive :class:`Call` s, and produces a
:class:`UnifiedOutput`. ``lmms_eval_unify.generation.engine`` runs many of them in lockstep so that the same phase of
several requests (all stage-1 images of a generate-then-answer batch, visual-CoT step k) is one batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from lmms_eval_unify.generation.primitives import GENERATE_IMAGE, GENERATE_VIDEO, UNDERSTAND, Primitives
from lmms_eval_unify.output.record import Step, UnifiedOutput

PROTOCOL_KEYS = frozenset(
    {
        "protocol",
        "max_steps",
        "stop_words",
        "step_prompt",
        "image_prompt",
        "final_prompt",
        "gen_prompt",
        "gen_inputs",
        "answer_prompt",
        "num_frames",
        "answer_space",
        "visual_cot",
        "until",
    }
)
"""Keys of ``generation_kwargs`` that configure the protocol; the rest are decoding parameters."""

GEN_PROMPT_TAGS = re.compile(r"\[GEN_PROMPT\](.*?)\[/GEN_PROMPT\]", re.DOTALL)
QUESTION_TAGS = re.compile(r"\[QUESTION\](.*?)\[/QUESTION\]", re.DOTALL)


@dataclass
class Phase:
    """Where a protocol is: ``name`` ("answer", "plan", "render", "final", "generate") and the step (1-based)."""

    name: str = "answer"
    step: int = 0


@dataclass(frozen=True)
class Call:
    """One primitive call a protocol asks for; the engine answers it (alone or batched with others)."""

    primitive: str  # UNDERSTAND | GENERATE_IMAGE | GENERATE_VIDEO
    prompt: str
    images: list[Image.Image]
    phase: Phase


Protocol = Generator[Call, Any, UnifiedOutput]
"""A protocol is a generator: it yields the primitive calls it needs, receives their results, and returns
the record. Written as plain sequential code, it lets the engine advance many requests together."""


@dataclass
class ProtocolRun:
    """One request being served: its inputs, options, decoding parameters, saved images and timings."""

    model: Primitives
    task: str
    doc_id: Any
    prompt: str
    images: list[Image.Image]
    options: dict[str, Any]
    decoding: dict[str, Any]
    saved: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def save(self, image: Image.Image, name: str) -> str:
        relative = self.model.media.save_image(self.task, self.doc_id, name, image)
        self.saved.append(relative)
        return relative


def direct(run: ProtocolRun) -> Protocol:
    """Text answer to the prompt and the input images."""
    text = yield Call(UNDERSTAND, run.prompt, run.images, Phase("answer"))
    return UnifiedOutput("direct", text=text)


def answer_and_image(run: ProtocolRun) -> Protocol:
    """A text answer and one generated image for the same prompt."""
    text = yield Call(UNDERSTAND, run.prompt, run.images, Phase("answer"))
    image = yield Call(GENERATE_IMAGE, run.prompt, run.images, Phase("generate"))
    return UnifiedOutput("answer_and_image", text=text, images=[run.save(image, "image_00")])


def image_only(run: ProtocolRun) -> Protocol:
    """One generated image (text-to-image without input images, editing with them)."""
    image = yield Call(GENERATE_IMAGE, run.prompt, run.images, Phase("generate"))
    return UnifiedOutput("image_only", images=[run.save(image, "image_00")])


def split_generate_then_answer_prompt(prompt: str, options: dict[str, Any]) -> tuple[str, str]:
    """Stage-1 generation prompt and stage-2 question, from ``[GEN_PROMPT]…[QUESTION]…`` tags or options."""
    gen_match, question_match = GEN_PROMPT_TAGS.search(prompt), QUESTION_TAGS.search(prompt)
    question = question_match.group(1).strip() if question_match else prompt
    if gen_match:
        gen_prompt = gen_match.group(1).strip()
    else:
        gen_prompt = str(options.get("gen_prompt", "{question}"))
    return gen_prompt.replace("{question}", question), question


def generate_then_answer(run: ProtocolRun) -> Protocol:
    """Stage 1: input images + generation prompt -> image. Stage 2: question + inputs + that image -> answer.

    Stage 1 sees every input image unless ``gen_inputs: first`` (what one benchmark's released code does; its
    tasks opt in).
    """
    gen_prompt, question = split_generate_then_answer_prompt(run.prompt, run.options)
    gen_images = run.images[:1] if run.options.get("gen_inputs", "all") == "first" else run.images
    image = yield Call(GENERATE_IMAGE, gen_prompt, gen_images, Phase("generate", 1))
    relative = run.save(image, "generated_00")
    text = yield Call(UNDERSTAND, question, [*run.images, image], Phase("answer", 2))
    return UnifiedOutput(
        "generate_then_answer",
        text=text,
        images=[relative],
        steps=[Step(text=gen_prompt, image=relative), Step(text=text)],
    )


def _is_stop(text: str, stop_words: Sequence[str]) -> bool:
    return any(re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) for word in stop_words)


def _visual_chain(run: ProtocolRun, final_answer: bool) -> Protocol:
    """Iterative steps: the model states its next action, then renders the state after it.

    The history (prompt, earlier step texts, every image so far) is fed back at each step. The loop ends
    when a step's text contains a stop word or after ``max_steps``; the model is never told how many steps
    the reference solution has. With ``final_answer`` a last text call produces the answer.
    """
    options = run.options
    max_steps = int(options.get("max_steps", 12))
    stop_words = list(options.get("stop_words", ["Done"]))
    step_prompt = str(options.get("step_prompt", "Step {step}: state your next action, or say Done."))
    image_prompt = str(options.get("image_prompt", "Generate the image of the state after step {step}."))
    history_images = list(run.images)
    transcript = run.prompt
    steps: list[Step] = []
    for step in range(1, max_steps + 1):
        prompt = f"{transcript}\n\n{step_prompt.format(step=step)}"
        text = yield Call(UNDERSTAND, prompt, list(history_images), Phase("plan", step))
        if _is_stop(text, stop_words):
            steps.append(Step(text=text))
            break
        transcript = f"{transcript}\n\n{text}"
        prompt = f"{transcript}\n\n{image_prompt.format(step=step)}"
        image = yield Call(GENERATE_IMAGE, prompt, list(history_images), Phase("render", step))
        steps.append(Step(text=text, image=run.save(image, f"step_{step:02d}")))
        history_images.append(image)
    images = [s.image for s in steps if s.image]
    if not final_answer:
        return UnifiedOutput("visual_cot_steps", text=steps[-1].text if steps else "", images=images, steps=steps)
    final_prompt = str(options.get("final_prompt", "Now give your final answer."))
    prompt = f"{transcript}\n\n{final_prompt}"
    text = yield Call(UNDERSTAND, prompt, list(history_images), Phase("final", len(images)))
    return UnifiedOutput("image_sequence_then_answer", text=text, images=images, steps=steps)


def visual_cot_steps(run: ProtocolRun) -> Protocol:
    """Multi-step visual chain of thought: a decision text and a state image per step."""
    return (yield from _visual_chain(run, final_answer=False))


def image_sequence_then_answer(run: ProtocolRun) -> Protocol:
    """One image per step (as in maze, sliding), then a final text answer."""
    return (yield from _visual_chain(run, final_answer=True))


def video(run: ProtocolRun) -> Protocol:
    """A generated video, stored as PNG frames."""
    frames = yield Call(GENERATE_VIDEO, run.prompt, run.images, Phase("generate"))
    saved = [run.save(frame, f"frame_{i:03d}") for i, frame in enumerate(frames)]
    return UnifiedOutput("video", video_frames=saved)


@dataclass(frozen=True)
class ProtocolSpec:
    """A protocol and the primitives it needs."""

    run: Callable[[ProtocolRun], Protocol]
    needs: frozenset[str]


PROTOCOLS: dict[str, ProtocolSpec] = {
    "direct": ProtocolSpec(direct, frozenset({UNDERSTAND})),
    "answer_and_image": ProtocolSpec(answer_and_image, frozenset({UNDERSTAND, GENERATE_IMAGE})),
    "image_only": ProtocolSpec(image_only, frozenset({GENERATE_IMAGE})),
    "generate_then_answer": ProtocolSpec(generate_then_answer, frozenset({UNDERSTAND, GENERATE_IMAGE})),
    "visual_cot_steps": ProtocolSpec(visual_cot_steps, frozenset({UNDERSTAND, GENERATE_IMAGE})),
    "image_sequence_then_answer": ProtocolSpec(image_sequence_then_answer, frozenset({UNDERSTAND, GENERATE_IMAGE})),
    "video": ProtocolSpec(video, frozenset({GENERATE_VIDEO})),
}


def protocol_name(gen_kwargs: dict[str, Any], default: str = "direct") -> str:
    """The protocol a request asks for; upstream ``visual_cot: true`` means generate-then-answer."""
    if "protocol" in gen_kwargs:
        return str(gen_kwargs["protocol"])
    return "generate_then_answer" if gen_kwargs.get("visual_cot") else default


def split_generation_kwargs(gen_kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(protocol options, decoding parameters)."""
    options = {k: v for k, v in gen_kwargs.items() if k in PROTOCOL_KEYS}
    decoding = {k: v for k, v in gen_kwargs.items() if k not in PROTOCOL_KEYS}
    return options, decoding
