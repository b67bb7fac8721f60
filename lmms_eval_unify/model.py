"""Base class of every unified-model adapter: lmms-eval plumbing and protocol dispatch, done once.

An adapter subclasses :class:`UnifiedModel`, declares ``capabilities`` and implements the primitives it
has: ``understand(images, prompt, **decoding) -> str``, ``generate_image(prompt, images, **decoding) ->
PIL.Image`` and optionally ``generate_video(prompt, images, **decoding) -> list[PIL.Image]``. The base class
serves ``generate_until`` and ``generate_visual_cot`` by running the protocol each task names, writes the
images through the output contract, resumes finished samples, and records per-request failures.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from dataclasses import dataclass
from typing import Any, ClassVar

from accelerate import PartialState
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from PIL import Image
from tqdm import tqdm

from lmms_eval_unify.media import MediaStore, resolve_output_root
from lmms_eval_unify.protocols import (
    GENERATE_IMAGE,
    GENERATE_VIDEO,
    PROTOCOLS,
    UNDERSTAND,
    UNDERSTAND_VIDEO,
    Phase,
    ProtocolRun,
    protocol_name,
    split_generation_kwargs,
)
from lmms_eval_unify.record import UnifiedOutput
from lmms_eval_unify.visuals import DEFAULT_VIDEO_FRAMES, Video, flatten_visuals, model_inputs


def to_pil_images(visuals: Any) -> list[Image.Image]:
    """Task visuals (PIL images, paths, HF image dicts, nested lists) as RGB PIL images; no videos."""
    items = flatten_visuals(visuals)
    if any(isinstance(item, Video) for item in items):
        raise TypeError("a video visual where images were expected")
    return items


@dataclass(frozen=True)
class RequestInfo:
    """The request being served (instruments such as the oracle read their document through it)."""

    task: str
    split: str
    doc_id: Any
    options: dict[str, Any]


class UnifiedModel(lmms):
    """A unified model as lmms-eval sees it (a *simple* model, so visual-CoT tasks can run)."""

    is_simple = True
    model_id: ClassVar[str] = "unified"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    max_input_images: ClassVar[int | None] = None
    """How many input images the model takes (``1`` for single-image models; ``None``: any number)."""

    def __init__(self, output_dir: str | None = None, seed: int = 0, resume: bool = True, **kwargs: Any) -> None:
        super().__init__()
        ignored = {k: v for k, v in kwargs.items() if k not in ("batch_size", "max_batch_size", "device")}
        if ignored:
            logger.warning("{}: ignoring unknown model arguments {}", self.model_id, sorted(ignored))
        self.seed = int(seed)
        self.resume = str(resume).lower() not in ("false", "0", "no")
        self.media = MediaStore(resolve_output_root(output_dir) / self.model_id)
        self.model_args = self.describe()
        self.phase = Phase()
        self.request: RequestInfo | None = None
        state = PartialState()
        self._rank, self._world_size = state.process_index, state.num_processes

    def describe(self) -> dict[str, Any]:
        """What identifies this model's outputs in resume signatures (adapters add their arguments)."""
        return {"model": self.model_id, "seed": self.seed}

    # ---- primitives (adapters override what they support) ------------------------------------------
    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        raise NotImplementedError(f"{self.model_id} cannot answer in text")

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        raise NotImplementedError(f"{self.model_id} cannot generate images")

    def generate_video(self, prompt: str, images: list[Image.Image], **decoding: Any) -> list[Image.Image]:
        raise NotImplementedError(f"{self.model_id} cannot generate videos")

    def sample_seed(self, task: str, doc_id: Any) -> int:
        """A per-sample seed, stable across runs and processes."""
        digest = hashlib.sha256(f"{self.seed}/{task}/{doc_id}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    # ---- lmms-eval entry points ----------------------------------------------------------------------
    def generate_until(self, requests: list[Instance]) -> list[str]:
        return [self.respond(request) for request in tqdm(requests, desc=f"{self.model_id}", disable=self.rank != 0)]

    def generate_visual_cot(self, requests: list[Instance]) -> list[str]:
        return self.generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("unified models are evaluated generatively; loglikelihood is not supported")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("multi-round requests are not supported; use a protocol instead")

    def respond(self, request: Instance) -> str:
        """Serve one lmms-eval request: resume, or run its protocol; a failure is recorded, never raised."""
        ctx, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
        gen_kwargs = dict(gen_kwargs or {})
        name = protocol_name(gen_kwargs)
        signature = self._signature(ctx, gen_kwargs)
        if self.resume:
            cached = self.media.load_record(task, doc_id, signature)
            if cached is not None:
                return cached.to_json()
        self.request = RequestInfo(task, split, doc_id, split_generation_kwargs(gen_kwargs)[0])
        started = time.perf_counter()
        record = self._run_protocol(name, ctx, gen_kwargs, doc_to_visual, task, split, doc_id)
        record.timings["total"] = time.perf_counter() - started
        record.root, record.signature = str(self.media.root), signature
        self.media.save_record(task, doc_id, record)
        return record.to_json()

    def _run_protocol(self, name: str, ctx: str, gen_kwargs: dict, doc_to_visual, task: str, split: str, doc_id: Any):
        spec = PROTOCOLS.get(name)
        if spec is None:
            return UnifiedOutput(name, error=f"unknown protocol {name!r}; known: {sorted(PROTOCOLS)}")
        missing = spec.needs - self.capabilities
        if missing:
            return UnifiedOutput(name, unsupported=f"{self.model_id} lacks {', '.join(sorted(missing))}")
        options, decoding = split_generation_kwargs(gen_kwargs)
        decoding["seed"] = self.sample_seed(task, doc_id)
        run = None
        try:
            doc = self.task_dict[task][split][doc_id]
            images = model_inputs(
                doc_to_visual(doc),
                UNDERSTAND_VIDEO in self.capabilities,
                self.max_input_images,
                int(options.get("num_frames", DEFAULT_VIDEO_FRAMES)),
            )
            run = ProtocolRun(self, task, doc_id, ctx, images, options, decoding)
            record = spec.run(run)
            record.timings.update(run.timings)
            return record
        except Exception as exc:  # noqa: BLE001 - one bad sample must not end the run
            logger.error("{} failed on {}/{}: {}", self.model_id, task, doc_id, exc)
            logger.debug(traceback.format_exc())
            return UnifiedOutput(name, error=f"{type(exc).__name__}: {exc}", timings=run.timings if run else {})

    def _signature(self, ctx: str, gen_kwargs: dict) -> str:
        payload = json.dumps([self.model_args, ctx, gen_kwargs], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()


UNDERSTANDING_ONLY = frozenset({UNDERSTAND})
UNDERSTAND_AND_GENERATE = frozenset({UNDERSTAND, GENERATE_IMAGE})
ALL_PRIMITIVES = frozenset({UNDERSTAND, GENERATE_IMAGE, GENERATE_VIDEO})
