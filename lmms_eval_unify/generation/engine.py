"""Runs many protocol generators in lockstep, answering the same phase of several requests in one batch.

Each request's protocol (``lmms_eval_unify.generation.protocols``) yields primitive :class:`Call` s. Every round, the
pending calls are grouped by primitive, phase and decoding parameters (the per-sample seed aside) and each
group is answered in chunks of the model's ``batch_size``: all stage-1 images of a generate-then-answer
window together, then all its answers; visual-CoT step k of many samples at once.

* Image generation is batched through ``generate_image_batch`` when the adapter implements it; items keep
  their own decoding parameters, seed included, so a batch equals the one-by-one run.
* Understanding is batched through ``understand_batch`` when the adapter implements it and decoding is
  greedy (one seed per batch call would otherwise change sampled answers).
* A failing batch falls back to one call per item; a failing item fails only its own request.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loguru import logger
from PIL import Image

from lmms_eval_unify.generation.primitives import (
    GENERATE_IMAGE,
    GENERATE_VIDEO,
    UNDERSTAND,
    Primitives,
    RequestInfo,
)
from lmms_eval_unify.generation.protocols import Call, Protocol, ProtocolRun
from lmms_eval_unify.output.record import UnifiedOutput


@dataclass
class Pending:
    """A request whose protocol is running: the generator and the call it waits on."""

    run: ProtocolRun
    protocol: Protocol
    info: RequestInfo
    name: str
    call: Call | None = None

    @property
    def waiting(self) -> Call:
        """The call the request waits on (asked only of a request whose protocol is still running)."""
        if self.call is None:
            raise RuntimeError(f"{self.name}: its protocol has ended and waits on no call")
        return self.call


def greedy(decoding: dict[str, Any]) -> bool:
    """Whether decoding is deterministic (temperature 0 and no sampling), so the seed does not matter."""
    return not (float(decoding.get("temperature", 0) or 0) > 0 or decoding.get("do_sample"))


def _group_key(item: Pending) -> str:
    call = item.waiting
    decoding = {k: v for k, v in item.run.decoding.items() if k != "seed"}
    return json.dumps([call.primitive, call.phase.name, call.phase.step, decoding], sort_keys=True, default=str)


def run_lockstep(model: Primitives, items: list[Pending], finish: Callable[[Pending, UnifiedOutput], None]) -> None:
    """Advance every protocol of ``items`` to its end; ``finish`` receives each request's record."""
    active = [item for item in items if _advance(item, finish)]
    while active:
        groups: dict[str, list[Pending]] = {}
        for item in active:
            groups.setdefault(_group_key(item), []).append(item)
        for members in groups.values():
            for start in range(0, len(members), model.batch_size):
                chunk = members[start : start + model.batch_size]
                for item, result in zip(chunk, _execute(model, chunk), strict=True):
                    _advance(item, finish, result)
        active = [item for item in active if item.call is not None]


def _advance(item: Pending, finish: Callable[[Pending, UnifiedOutput], None], result: Any = None) -> bool:
    """Send ``result`` (or throw it, if an exception) into the protocol; True while it waits on a call."""
    try:
        if isinstance(result, Exception):
            item.call = item.protocol.throw(result)
        else:
            item.call = item.protocol.send(result)
        return True
    except StopIteration as stop:
        item.call = None
        record = stop.value
        record.timings.update(item.run.timings)
        finish(item, record)
    except Exception as exc:  # noqa: BLE001 - one bad sample must not end the run
        item.call = None
        logger.error("{} failed on {}/{}: {}", item.run.model.model_id, item.run.task, item.run.doc_id, exc)
        logger.debug(traceback.format_exc())
        finish(item, UnifiedOutput(item.name, error=f"{type(exc).__name__}: {exc}", timings=item.run.timings))
    return False


def _execute(model: Primitives, chunk: list[Pending]) -> list[Any]:
    """Results (or exceptions) of the chunk's calls, which share primitive, phase and decoding."""
    call = chunk[0].waiting
    started = time.perf_counter()
    results = _batched(model, chunk) if len(chunk) > 1 else None
    if results is None:
        results = [_single(model, item) for item in chunk]
    elapsed = (time.perf_counter() - started) / len(chunk)
    for item in chunk:
        item.run.timings[call.primitive] = item.run.timings.get(call.primitive, 0.0) + elapsed
    return results


def _batched(model: Primitives, chunk: list[Pending]) -> list[Any] | None:
    """One backend call for the chunk, or None when the adapter has no batched primitive for it (or it
    failed, then each item is served alone)."""
    call, decoding = chunk[0].waiting, chunk[0].run.decoding
    values: list[str] | list[Image.Image]
    try:
        if call.primitive == UNDERSTAND and model.batches_understanding() and greedy(decoding):
            answers = model.understand_batch(
                [(i.waiting.images, i.waiting.prompt) for i in chunk], **decoding, phase=call.phase
            )
            values = [str(v) for v in answers]
        elif call.primitive == GENERATE_IMAGE and model.batches_generation():
            images = model.generate_image_batch(
                [(i.waiting.prompt, i.waiting.images, {**i.run.decoding, "phase": call.phase}) for i in chunk]
            )
            values = [_checked_image(v) for v in images]
        else:
            return None
        if len(values) != len(chunk):
            raise ValueError(f"the batched primitive returned {len(values)} results for {len(chunk)} inputs")
        return values
    except Exception as exc:  # noqa: BLE001 - fall back to one call per item, each failure recorded
        logger.warning("{}: batch of {} failed ({}); serving them one by one", model.model_id, len(chunk), exc)
        return None


def _single(model: Primitives, item: Pending) -> Any:
    call = item.waiting
    decoding = {**item.run.decoding, "phase": call.phase}
    model.request = item.info
    try:
        if call.primitive == UNDERSTAND:
            return str(model.understand(list(call.images), call.prompt, **decoding))
        if call.primitive == GENERATE_IMAGE:
            return _checked_image(model.generate_image(call.prompt, list(call.images), **decoding))
        if call.primitive == GENERATE_VIDEO:
            return [_checked_image(frame) for frame in model.generate_video(call.prompt, list(call.images), **decoding)]
        raise ValueError(f"unknown primitive {call.primitive!r}")
    except Exception as exc:  # noqa: BLE001 - thrown into the request's protocol
        return exc


def _checked_image(value: Any) -> Image.Image:
    if not isinstance(value, Image.Image):
        raise TypeError(f"the model returned {type(value).__name__}, expected a PIL image")
    return value
