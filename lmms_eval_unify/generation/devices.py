"""Torch helpers every adapter shares: the device and precision a model runs in, seeded generators, and a
task's decoding parameters as Hugging Face ``generate`` keywords."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

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
