"""Base class of every unified-model adapter: lmms-eval plumbing and protocol dispatch, done once.

An adapter subclasses :class:`UnifiedModel`, declares ``capabilities`` and implements the primitives it
has: ``understand(images, prompt, **decoding) -> str``, ``generate_image(prompt, images, **decoding) ->
PIL.Image`` and optionally ``generate_video(prompt, images, **decoding) -> list[PIL.Image]``. The base class
serves ``generate_until`` and ``generate_visual_cot`` by running the protocol each task names, writes the
images through the output contract, resumes finished samples, and records per-request failures.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from accelerate import PartialState
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from PIL import Image
from tqdm import tqdm

from lmms_eval_unify import run_status
from lmms_eval_unify.engine import Pending, run_lockstep
from lmms_eval_unify.media import MediaStore, configuration_folder, resolve_output_root
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
from lmms_eval_unify.run_context import trust_media_root
from lmms_eval_unify.visuals import (
    DEFAULT_VIDEO_FRAMES,
    model_inputs,
    visuals_fingerprint,
)

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def resolve_device(device: str | None, local_index: int = 0) -> torch.device:
    """The device a model runs on: ``device`` if given, else this process's GPU, else the CPU.

    A bare ``cuda`` (lmms-eval's ``--device cuda``) means this process's GPU, so data-parallel ranks spread.
    """
    if device:
        chosen = torch.device(device)
        return torch.device("cuda", local_index) if chosen.type == "cuda" and chosen.index is None else chosen
    return torch.device("cuda", local_index) if torch.cuda.is_available() else torch.device("cpu")


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """``dtype`` if given (``bfloat16``, ``float16``, ``float32``), else bf16 on CUDA and fp32 elsewhere."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype:
        if str(dtype) not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        return DTYPES[str(dtype)]
    return torch.bfloat16 if device.type == "cuda" else torch.float32


@contextlib.contextmanager
def seeded(seed: int, device: torch.device | None = None) -> Iterator[None]:
    """Run a block with torch's global RNGs seeded, restoring them afterwards (reproducible samples)."""
    cuda = device is not None and device.type == "cuda"
    with torch.random.fork_rng(devices=[device] if cuda else [], device_type="cuda" if cuda else "cpu"):
        torch.manual_seed(seed)
        yield


def decoding_options(decoding: dict[str, Any], cap: int | None = None) -> dict[str, Any]:
    """Task decoding parameters as Hugging Face ``generate`` keywords (temperature 0 means greedy).

    ``cap`` (an adapter's ``max_new_tokens`` model argument) bounds the task's ``max_new_tokens``.
    """
    max_new = int(decoding.get("max_new_tokens", 512))
    options: dict[str, Any] = {"max_new_tokens": min(max_new, cap) if cap else max_new}
    temperature = float(decoding.get("temperature", 0) or 0)
    if temperature > 0 or decoding.get("do_sample"):
        options.update(do_sample=True, temperature=temperature or 1.0)
        if "top_p" in decoding and decoding["top_p"] is not None:
            options["top_p"] = float(decoding["top_p"])
    else:
        options["do_sample"] = False
    return options


def as_bool(value: Any) -> bool:
    """A model argument read as a boolean (``true``/``false``/``1``/``0`` strings included)."""
    return str(value).lower() not in ("false", "0", "no", "none", "")


LMMS_EVAL_PASSED_ARGS = frozenset({"max_batch_size"})
"""Model arguments lmms-eval itself adds to ``--model_args``, accepted by every adapter."""


def valid_model_args(cls: type) -> list[str]:
    """The ``--model_args`` keys an adapter class takes: its and its bases' ``__init__`` parameters."""
    names = set(LMMS_EVAL_PASSED_ARGS)
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass in (lmms, object):
            continue
        for parameter in inspect.signature(init).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                names.add(parameter.name)
    names.discard("self")
    return sorted(names)


@dataclass(frozen=True)
class RequestInfo:
    """The request being served (instruments such as the oracle read their document through it)."""

    task: str
    split: str
    doc_id: Any
    options: dict[str, Any]
    index: int = 0
    """Position of the request in the list lmms-eval passed."""


class UnifiedModel(lmms):
    """A unified model as lmms-eval sees it (a *simple* model, so visual-CoT tasks can run)."""

    is_simple = True
    model_id: ClassVar[str] = "unified"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    max_input_images: ClassVar[int | None] = None
    """How many input images the model takes (``1`` for single-image models; ``None``: any number)."""
    run_only_args: ClassVar[frozenset[str]] = frozenset(
        {"output_dir", "resume", "device", "batch_size", "max_batch_size"}
    )
    """Model arguments that do not change outputs, so ``describe()`` (the resume signature) leaves them out;
    adapters add theirs (code checkouts, credentials, retries). Every other argument must be described."""

    def __init__(
        self,
        output_dir: str | None = None,
        seed: int = 0,
        resume: bool = True,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int | str = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - LMMS_EVAL_PASSED_ARGS)
        if unknown:
            raise TypeError(
                f"{self.model_id}: unknown model arguments {unknown}; valid: {valid_model_args(type(self))}"
            )
        self.seed = int(seed)
        self.resume = as_bool(resume)
        state = PartialState()
        self._rank, self._world_size = state.process_index, state.num_processes
        self.device = resolve_device(device, state.local_process_index)
        self.dtype = resolve_dtype(dtype, self.device)
        logger.info(
            "{}: process {} of {} on {} ({})",
            self.model_id,
            self.rank,
            self.world_size,
            self.device,
            self.dtype,
        )
        self.batch_size = max(1, int(batch_size)) if str(batch_size).isdigit() else 1
        self._output_dir = output_dir
        self._media: MediaStore | None = None
        self.resumed = 0
        self.phase = Phase()
        self.request: RequestInfo | None = None

    @property
    def media(self) -> MediaStore:
        """This configuration's media folder (``<media base>/<model>-<hash of describe()>``), made on first
        use: ``describe()`` is complete only once the adapter's own ``__init__`` has run."""
        if self._media is None:
            folder = configuration_folder(self.model_id, self.describe())
            self._media = MediaStore(resolve_output_root(self._output_dir) / folder)
            self._media.root.mkdir(parents=True, exist_ok=True)
            (self._media.root / "model.json").write_text(json.dumps(self.describe(), indent=1, default=str))
            trust_media_root(self._media.root)
            logger.info("{}: outputs under {}", self.model_id, self._media.root)
        return self._media

    @property
    def model_args(self) -> dict[str, Any]:
        """This model's identifying arguments (read when signing a request, after the adapter is built)."""
        return self.describe()

    def describe(self) -> dict[str, Any]:
        """What identifies this model's outputs in resume signatures (adapters add every argument that
        changes outputs; the numeric precision does too)."""
        return {"model": self.model_id, "seed": self.seed, "dtype": str(self.dtype).removeprefix("torch.")}

    # ---- primitives (adapters override what they support) ------------------------------------------
    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        raise NotImplementedError(f"{self.model_id} cannot answer in text")

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        raise NotImplementedError(f"{self.model_id} cannot generate images")

    def generate_video(self, prompt: str, images: list[Image.Image], **decoding: Any) -> list[Image.Image]:
        raise NotImplementedError(f"{self.model_id} cannot generate videos")

    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        """Answers to several ``(images, prompt)`` pairs sharing decoding parameters.

        Adapters whose backend batches override this; the engine sends greedy understanding calls of the
        same phase through it in chunks of the ``batch_size`` model argument when they do.
        """
        return [self.understand(images, prompt, **decoding) for images, prompt in batch]

    def sample_seed(self, task: str, doc_id: Any) -> int:
        """A per-sample seed, stable across runs and processes."""
        digest = hashlib.sha256(f"{self.seed}/{task}/{doc_id}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    # ---- lmms-eval entry points ----------------------------------------------------------------------
    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Serve requests in windows of ``batch_size``: saved outputs are reused, the rest run their
        protocols in lockstep (``lmms_eval_unify.engine``) so each phase of a window is one batch."""
        self.resumed = 0
        responses: dict[int, str] = {}
        progress = tqdm(total=len(requests), desc=f"{self.model_id}", disable=self.rank != 0)
        window: list[Pending] = []
        started: dict[int, float] = {}

        def finish(item: Pending, record: UnifiedOutput) -> None:
            index = item.info.index
            responses[index] = self._finished(requests[index], record, started[index])
            progress.update(1)

        for index, request in enumerate(requests):
            started[index] = time.perf_counter()
            prepared = self._prepare(index, request)
            if isinstance(prepared, Pending):
                window.append(prepared)
            else:
                responses[index] = prepared
                progress.update(1)
            if len(window) >= self.batch_size or (window and index == len(requests) - 1):
                for item in window:
                    started[item.info.index] = time.perf_counter()
                run_lockstep(self, window, finish)
                window = []
        progress.close()
        if self.resumed:
            logger.info(
                "{}: {} of {} samples served from saved records under {}",
                self.model_id,
                self.resumed,
                len(requests),
                self.media.root,
            )
        return [responses[i] for i in range(len(requests))]

    def generate_visual_cot(self, requests: list[Instance]) -> list[str]:
        return self.generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("unified models are evaluated generatively; loglikelihood is not supported")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("multi-round requests are not supported; use a protocol instead")

    def _prepare(self, index: int, request: Instance) -> str | Pending:
        """A finished response (resumed, unsupported, failed before any primitive) or a protocol to run."""
        ctx, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
        gen_kwargs = dict(gen_kwargs or {})
        name = protocol_name(gen_kwargs)
        if self.resume:
            cached = self.media.load_record(task, doc_id, self._signature(request))
            if cached is not None:
                self.resumed += 1
                run_status.status().count_resumed()
                return cached.to_json()
        spec = PROTOCOLS.get(name)
        if spec is None:
            record = UnifiedOutput(name, error=f"unknown protocol {name!r}; known: {sorted(PROTOCOLS)}")
            return self._finished(request, record, time.perf_counter())
        missing = spec.needs - self.capabilities
        if missing:
            record = UnifiedOutput(name, unsupported=f"{self.model_id} lacks {', '.join(sorted(missing))}")
            return self._finished(request, record, time.perf_counter())
        options, decoding = split_generation_kwargs(gen_kwargs)
        decoding["seed"] = self.sample_seed(task, doc_id)
        info = RequestInfo(task, split, doc_id, options, index)
        try:
            images = self._inputs_of(doc_to_visual, task, split, doc_id, options)
        except Exception as exc:  # noqa: BLE001 - one bad sample must not end the run
            logger.error("{} failed on {}/{}: {}", self.model_id, task, doc_id, exc)
            record = UnifiedOutput(name, error=f"{type(exc).__name__}: {exc}")
            return self._finished(request, record, time.perf_counter())
        run = ProtocolRun(self, task, doc_id, ctx, images, options, decoding)
        return Pending(run, spec.run(run), info, name)

    def _finished(self, request: Instance, record: UnifiedOutput, started: float) -> str:
        """Sign, save and serialise a request's record."""
        _, _, _, doc_id, task, _ = request.args
        record.timings["total"] = time.perf_counter() - started
        record.root, record.signature = str(self.media.root), self._signature(request)
        self.media.save_record(task, doc_id, record)
        return record.to_json()

    # ---- batched primitives ---------------------------------------------------------------------------
    def batches_understanding(self) -> bool:
        """Whether ``understand_batch`` is a real batched call (an adapter override)."""
        return type(self).understand_batch is not UnifiedModel.understand_batch

    def batches_generation(self) -> bool:
        """Whether ``generate_image_batch`` is a real batched call (an adapter override)."""
        return type(self).generate_image_batch is not UnifiedModel.generate_image_batch

    def generate_image_batch(
        self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]
    ) -> list[Image.Image]:
        """Images for several ``(prompt, images, decoding)`` requests, each with its own decoding parameters
        (seed included): an override must return what one-by-one ``generate_image`` calls would."""
        return [self.generate_image(prompt, images, **decoding) for prompt, images, decoding in batch]

    def _inputs_of(self, doc_to_visual, task: str, split: str, doc_id: Any, options: dict) -> list:
        """The images (or videos) this model is given for a doc, per its capabilities and the task options."""
        return model_inputs(
            doc_to_visual(self.task_dict[task][split][doc_id]),
            UNDERSTAND_VIDEO in self.capabilities,
            self.max_input_images,
            int(options.get("num_frames", DEFAULT_VIDEO_FRAMES)),
        )

    def _signature(self, request: Instance) -> str:
        """What a stored output must match to be reused: model, prompt, generation options and the doc's
        visual inputs (records are stored per task and doc id, and a doc id can name another question
        when the dataset, its order or the repeats change)."""
        ctx, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
        try:
            inputs = visuals_fingerprint(doc_to_visual(self.task_dict[task][split][doc_id]))
        except Exception as exc:  # noqa: BLE001 - the protocol run records the failure; never resume it
            inputs = f"unreadable: {type(exc).__name__}: {exc}"
        payload = json.dumps(
            [self.model_args, ctx, dict(gen_kwargs or {}), inputs], sort_keys=True, default=str
        )
        return hashlib.sha256(payload.encode()).hexdigest()


UNDERSTANDING_ONLY = frozenset({UNDERSTAND})
UNDERSTAND_AND_GENERATE = frozenset({UNDERSTAND, GENERATE_IMAGE})
ALL_PRIMITIVES = frozenset({UNDERSTAND, GENERATE_IMAGE, GENERATE_VIDEO})
