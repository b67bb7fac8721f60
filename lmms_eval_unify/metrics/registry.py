"""Process-wide, thread-safe registry: each backbone is loaded once per MetricConfig."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from lmms_eval_unify.metrics.config import MetricConfig

T = TypeVar("T")

_registry_lock = threading.Lock()
_backbones: dict[MetricConfig, object] = {}
_load_locks: dict[MetricConfig, threading.Lock] = {}


def get_backbone(config: MetricConfig, load: Callable[[MetricConfig], T]) -> T:
    """Return the backbone for `config`, calling `load(config)` at most once even under concurrent calls."""
    with _registry_lock:
        if config in _backbones:
            return _backbones[config]  # type: ignore[return-value]
        load_lock = _load_locks.setdefault(config, threading.Lock())
    with load_lock:
        with _registry_lock:
            if config in _backbones:
                return _backbones[config]  # type: ignore[return-value]
        backbone = load(config)
        with _registry_lock:
            _backbones[config] = backbone
        return backbone


def clear_backbones() -> None:
    """Drop every loaded backbone (frees memory; the next call reloads)."""
    with _registry_lock:
        _backbones.clear()
        _load_locks.clear()
