"""Keep one broken ``lmms_eval.models`` plugin from removing every other plugin's models.

lmms-eval 0.7.3 loads the entry points of that group in one loop inside one ``try/except``: the first plugin
whose entry point raises ends the loop, so every plugin after it (ours included) disappears behind one vague
warning. The ``lmms_eval_unify_guard.pth`` file this package installs runs :func:`install` at interpreter
start; it waits for ``lmms_eval.models.registry_v2`` to be imported and makes its loader take each entry
point on its own, logging the one that failed. It imports nothing heavy until lmms-eval itself is imported.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

REGISTRY_MODULE = "lmms_eval.models.registry_v2"
_GUARD_MARK = "_lmms_eval_unify_guarded"


def load_each_entry_point(self: Any, group: str = "lmms_eval.models", *, overwrite: bool = False) -> None:
    """``ModelRegistryV2.load_entrypoint_manifests`` with each entry point loaded and registered on its own."""
    for entry_point in self._select_entry_points(group):
        try:
            for manifest in self._coerce_payload_to_manifests(entry_point.load()):
                self.register_manifest(manifest, overwrite=overwrite)
        except Exception as exc:  # noqa: BLE001 - a third-party plugin's failure must stay its own
            from loguru import logger

            logger.warning(
                "lmms-eval-unify: skipping model plugin {!r} ({}): {}: {}",
                entry_point.name,
                entry_point.value,
                type(exc).__name__,
                exc,
            )


def guard_registry(module: Any) -> None:
    """Replace the registry class's entry-point loader in an imported ``registry_v2`` module (idempotent)."""
    registry = getattr(module, "ModelRegistryV2", None)
    if registry is None or getattr(registry.load_entrypoint_manifests, _GUARD_MARK, False):
        return
    setattr(load_each_entry_point, _GUARD_MARK, True)
    registry.load_entrypoint_manifests = load_each_entry_point


def _guarding(execute: Any) -> Any:
    """A loader's ``exec_module`` that guards the registry once the module has run."""

    def exec_module(module: Any) -> None:
        execute(module)
        guard_registry(module)

    return exec_module


class _RegistryImportHook(importlib.abc.MetaPathFinder):
    """Finds ``registry_v2`` through the other finders and guards the module right after it executes."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != REGISTRY_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader.exec_module = _guarding(spec.loader.exec_module)
                return spec
        return None


def install() -> None:
    """Guard the registry now if lmms-eval's is already imported, else when it is."""
    if REGISTRY_MODULE in sys.modules:
        guard_registry(sys.modules[REGISTRY_MODULE])
    elif not any(isinstance(finder, _RegistryImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegistryImportHook())
