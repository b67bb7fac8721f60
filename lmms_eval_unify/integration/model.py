"""Base class of every unified-model adapter: lmms-eval plumbing and protocol dispatch, done once.

An adapter subclasses :class:`UnifiedModel`, declares ``capabilities`` and implements the primitives it
has: ``understand(images, prompt, **decoding) -> str``, ``generate_image(prompt, images, **decoding) ->
PIL.Image`` and optionally ``generate_video(prompt, images, **decoding) -> list[PIL.Image]``. ``decoding``
holds the task's decoding parameters, the per-sample ``seed`` and the protocol ``phase`` (a ``Phase``: which
step of which protocol asks; instruments answer by it, adapters may ignore it). The base class
serves ``generate_until`` and ``generate_visual_cot`` by running the protocol each task names, writes the
images through the output contract, resumes finished samples, and records per-request failures.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from accelerate import PartialState
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from PIL import Image
from tqdm import tqdm

from lmms_eval_unify import gate
from lmms_eval_unify.generation.devices import resolve_device, resolve_dtype
from lmms_eval_unify.generation.engine import Pending, run_lockstep
from lmms_eval_unify.generation.media import (
    MODEL_FILE,
    MODEL_PROVENANCE_KEY,
    MediaStore,
    configuration_folder,
    merged_provenance,
    model_file_text,
    resolve_output_root,
)
from lmms_eval_unify.generation.primitives import UNDERSTAND_VIDEO, RequestInfo
from lmms_eval_unify.generation.protocols import (
    PROTOCOLS,
    ProtocolRun,
    protocol_name,
    split_generation_kwargs,
)
from lmms_eval_unify.generation.readiness import Missing
from lmms_eval_unify.generation.settings import ModelSettings
from lmms_eval_unify.generation.visuals import (
    model_inputs,
    visuals_fingerprint,
)
from lmms_eval_unify.integration.seams import generation_arguments, task_of
from lmms_eval_unify.integration.task import UnifyTask
from lmms_eval_unify.output.record import UnifiedOutput, clean_text
from lmms_eval_unify.redaction import redact_secrets
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.context import trust_media_root
from lmms_eval_unify.writes import WriteRefused, make_folder, write_text

TEXT_ANSWER_PROTOCOLS = frozenset({"direct", "generate_then_answer"})
"""Protocols whose result lmms-eval's own tasks read as plain text (its GtA models return the stage-2 answer)."""


def is_lmms_eval_task(request: Instance) -> bool:
    """Whether the request comes from one of lmms-eval's own tasks (not a task of this plugin).

    lmms-eval passes the task's bound ``doc_to_visual`` in every generation request, so its owner says
    which task class built the request; requests made in code (tests, ``check-adapter``) count as ours. An
    evaluation in which no request had a task owner fails, naming the seam (``seams.evaluation``).
    """
    owner = task_of(request)
    return owner is not None and not isinstance(owner, UnifyTask)


def lmms_eval_response(record: UnifiedOutput) -> str:
    """A record in lmms-eval's own convention: the answer as plain text for text-answer protocols, else the
    JSON ``{"text", "images": [absolute paths]}`` (video frames as images); ``""`` for a failed or
    unsupported request (scored as a wrong answer; the reason stays in the saved ``record.json``)."""
    if record.error or record.unsupported:
        return ""
    if record.protocol in TEXT_ANSWER_PROTOCOLS:
        return clean_text(record.text)
    paths = [str(Path(record.root) / path) for path in [*record.images, *record.video_frames]]
    return json.dumps({"text": clean_text(record.text), "images": paths}, ensure_ascii=False)


class UnifiedModel(lmms):
    """A unified model as lmms-eval sees it (a *simple* model, so visual-CoT tasks can run)."""

    is_simple = True
    model_id: ClassVar[str] = "unified"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    max_input_images: int | None = None
    """How many input images the model takes (``1`` for single-image models; ``None``: any number); an adapter
    whose count depends on its settings sets it on the instance."""
    settings_class: ClassVar[type[ModelSettings]] = ModelSettings
    """The adapter's ``--model_args``: a :class:`ModelSettings` dataclass (see docs/adding_a_model.md)."""

    @classmethod
    def missing(cls, settings: Any) -> list[Missing]:
        """What building this model with ``settings`` (an instance of ``cls.settings_class``, which each adapter
        annotates with its own class) needs and this machine lacks (its code, weights, device,
        credentials), found without building or loading anything: the run preflight and ``check-adapter`` list
        it before the model is built. Every adapter that loads something declares it with the helpers of
        ``lmms_eval_unify.generation.readiness``; the default (the baseline instruments) lacks nothing."""
        return []

    def __init__(self, **model_args: Any) -> None:
        super().__init__()
        self.settings = self.settings_class.from_model_args(self.model_id, model_args)
        settings = self.settings
        self.seed, self.resume = settings.seed, settings.resume
        state = PartialState()
        self._rank, self._world_size = state.process_index, state.num_processes
        self.device = resolve_device(settings.device, state.local_process_index)
        self.dtype = resolve_dtype(settings.dtype, self.device)
        logger.info(
            "{}: process {} of {} on {} ({})",
            self.model_id,
            self.rank,
            self.world_size,
            self.device,
            self.dtype,
        )
        self.batch_size = max(1, settings.batch_size) if isinstance(settings.batch_size, int) else 1
        self._output_dir = settings.output_dir
        self._media: MediaStore | None = None
        self.resumed = 0
        self.request: RequestInfo | None = None
        self._recorded: dict[str, Any] | None = None

    @property
    def media(self) -> MediaStore:
        """This configuration's media folder (``<media base>/<model>-<hash of describe()>``), made on first
        use: ``describe()`` is complete only once the adapter's own ``__init__`` has run."""
        if self._media is None:
            folder = configuration_folder(self.model_id, self.describe())
            base = resolve_output_root(self._output_dir)
            store = MediaStore(base / folder)
            make_folder(store.written, base)  # a symlink planted at the folder is refused, never followed
            self._media = store
            trust_media_root(self._media.root)
            self.record_provenance()
            logger.info("{}: outputs under {}", self.model_id, self._media.root)
        return self._media

    def provenance(self) -> dict[str, Any]:
        """What this run learns about the model that ``describe()`` cannot say and that does not identify the
        configuration: the server, version and weights revision a served model answered from, the commit of the
        official code. Recorded in ``model.json`` (:meth:`record_provenance`) and the leaderboard manifest; the
        default, for models that reveal nothing at run time, is empty."""
        return {}

    def record_provenance(self) -> None:
        """(Re)write ``model.json``: ``describe()`` and the provenance list, this process's entry the newest
        (:func:`merged_provenance`). Rank 0 records provenance; the other processes write the file only when it
        is absent. Called when the media folder is made and after each ``generate_until``."""
        path = self.media.written / MODEL_FILE
        try:
            self._write_model_file(path)
        except WriteRefused as exc:  # the file fails, not the run
            logger.error("{}: {} not written: {}", self.model_id, MODEL_FILE, exc)

    def _write_model_file(self, path: Path) -> None:
        if self.rank != 0:
            if not path.exists():
                write_text(path, model_file_text(self.describe(), []), self.media.written.parent)
            return
        try:
            saved = gate.read_json(path, "data_file", [self.media.root])
        except gate.Refused:  # absent, or not a file we wrote: started afresh
            saved = {}
        earlier = saved.get(MODEL_PROVENANCE_KEY) if isinstance(saved, dict) else []
        try:
            entry = self.provenance()
        except Exception as exc:  # noqa: BLE001 - what the model reveals must never fail the run
            logger.warning("{}: provenance not recorded: {}: {}", self.model_id, type(exc).__name__, exc)
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        provenance = merged_provenance(earlier, entry, self._recorded)
        write_text(path, model_file_text(self.describe(), provenance), self.media.written.parent)
        self._recorded = entry or None

    @property
    def model_args(self) -> dict[str, Any]:
        """This model's identifying arguments (read when signing a request, after the adapter is built)."""
        return self.describe()

    def describe(self) -> dict[str, Any]:
        """What identifies this model's outputs (resume signatures, the media folder name): the model id and
        every settings field not marked run-only, with the numeric precision as resolved, and every secret in them
        redacted (:mod:`lmms_eval_unify.redaction`: a keyed hash, so two keys are still two configurations)."""
        dtype = str(self.dtype).removeprefix("torch.")
        return redact_secrets({"model": self.model_id, **self.settings.described(), "dtype": dtype})

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
        protocols in lockstep (``lmms_eval_unify.generation.engine``) so each phase of a window is one batch."""
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
        if self._media is not None:
            self.record_provenance()
        return [responses[i] for i in range(len(requests))]

    def generate_visual_cot(self, requests: list[Instance]) -> list[str]:
        return self.generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("unified models are evaluated generatively; loglikelihood is not supported")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("multi-round requests are not supported; use a protocol instead")

    def _prepare(self, index: int, request: Instance) -> str | Pending:
        """A finished response (resumed, unsupported, failed before any primitive) or a protocol to run."""
        ctx, gen_kwargs, doc_to_visual, doc_id, task, split = generation_arguments(request)
        gen_kwargs = dict(gen_kwargs or {})
        name = protocol_name(gen_kwargs)
        if self.resume:
            cached = self.media.load_record(task, doc_id, self._signature(request))
            if cached is not None:
                self.resumed += 1
                run_status.status().count_resumed()
                return self._response(request, cached)
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
        _, _, _, doc_id, task, _ = generation_arguments(request)
        record.timings["total"] = time.perf_counter() - started
        record.root, record.signature = str(self.media.root), self._signature(request)
        try:
            self.media.save_record(task, doc_id, record)
        except WriteRefused as exc:  # only resuming needs it: the response below carries the record
            logger.error(
                "{}: the record of {}/{} is not saved (it will not resume): {}", self.model_id, task, doc_id, exc
            )
        return self._response(request, record)

    def _response(self, request: Instance, record: UnifiedOutput) -> str:
        """What lmms-eval receives: our record's JSON for our tasks, lmms-eval's convention for its own."""
        if is_lmms_eval_task(request):
            return lmms_eval_response(record)
        return record.to_json()

    # ---- batched primitives ---------------------------------------------------------------------------
    def batches_understanding(self) -> bool:
        """Whether ``understand_batch`` is a real batched call (an adapter override)."""
        return type(self).understand_batch is not UnifiedModel.understand_batch

    def batches_generation(self) -> bool:
        """Whether ``generate_image_batch`` is a real batched call (an adapter override)."""
        return type(self).generate_image_batch is not UnifiedModel.generate_image_batch

    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """Images for several ``(prompt, images, decoding)`` requests, each with its own decoding parameters
        (seed included): an override must return what one-by-one ``generate_image`` calls would."""
        return [self.generate_image(prompt, images, **decoding) for prompt, images, decoding in batch]

    def _inputs_of(self, doc_to_visual, task: str, split: str, doc_id: Any, options: dict) -> list:
        """The images (or videos) this model is given for a doc, per its capabilities and the task options."""
        return model_inputs(
            doc_to_visual(self.task_dict[task][split][doc_id]),
            UNDERSTAND_VIDEO in self.capabilities,
            self.max_input_images,
            None if options.get("num_frames") is None else int(options["num_frames"]),
        )

    def _signature(self, request: Instance) -> str:
        """What a stored output must match to be reused: model, prompt, generation options and the doc's
        visual inputs (records are stored per task and doc id, and a doc id can name another question
        when the dataset, its order or the repeats change)."""
        ctx, gen_kwargs, doc_to_visual, doc_id, task, split = generation_arguments(request)
        try:
            inputs = visuals_fingerprint(doc_to_visual(self.task_dict[task][split][doc_id]))
        except Exception as exc:  # noqa: BLE001 - the protocol run records the failure; never resume it
            inputs = f"unreadable: {type(exc).__name__}: {exc}"
        payload = json.dumps([self.model_args, ctx, dict(gen_kwargs or {}), inputs], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()
