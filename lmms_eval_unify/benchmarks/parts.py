"""A benchmark entry's parts: modules of its package, each imported when first asked for."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from functools import partial
from types import ModuleType


def lazy_parts(package: str, names: Iterable[str]) -> dict[str, Callable[[], ModuleType]]:
    """``{name: importer}`` of the modules ``<package>.<name>`` (e.g. ``spec``, ``offline.data``): each is imported on
    its importer's first call, so an entry, and the registry, import nothing heavy. The names are the entry's own
    declaration, and a test imports every declared part of every entry, so a misspelt one fails there."""
    return {name: partial(importlib.import_module, f"{package}.{name}") for name in names}
