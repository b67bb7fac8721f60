"""Name the ``lmms_eval.models`` plugins that fail to load, and what that does to a run.

lmms-eval 0.7.3 loads the entry points of the ``lmms_eval.models`` group in one loop inside one ``try``
(``lmms_eval.models._initialize_model_registry``): the first entry point that raises ends the loop, no
plugin after it is registered, and the only trace is the warning "Failed to load model entry-point
manifests". Here each entry point is loaded on its own, the way lmms-eval loads it (import the object, call
it if callable, expect ``ModelManifest`` s), and every failure is named with its distribution and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata

GROUP = "lmms_eval.models"
"""The entry-point group lmms-eval reads model plugins from."""


@dataclass(frozen=True)
class BrokenPlugin:
    """An entry point of :data:`GROUP` that raises when lmms-eval loads it."""

    name: str
    value: str
    distribution: str
    error: str
    before_ours: bool
    """Whether lmms-eval reaches it before our entry point (then it hides our models)."""

    def describe(self) -> str:
        """Which plugin fails, from which distribution, and with what."""
        return (
            f"model plugin {self.name!r} ({self.value}, distribution {self.distribution}) fails to load: {self.error}"
        )

    def fix(self) -> str:
        """What the user does about it."""
        return (
            f"uninstall it (`pip uninstall {self.distribution}`) or repair it (reinstall "
            f"{self.distribution} with its dependencies, or fix the error above)"
        )


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points, in the order lmms-eval loads them."""
    return list(metadata.entry_points(group=GROUP))


def load_manifests(entry_point: metadata.EntryPoint) -> list:
    """The ``ModelManifest`` s of one entry point, built as lmms-eval builds them (it raises what lmms-eval's
    loader would raise: the plugin's own error, or ``TypeError`` for a payload that is not manifests)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    payload = entry_point.load()
    if callable(payload):
        payload = payload()
    if isinstance(payload, ModelManifest):
        return [payload]
    if isinstance(payload, str | bytes | dict) or not isinstance(payload, Iterable):
        raise TypeError(f"the entry point gave {type(payload).__name__}, not ModelManifest(s)")
    manifests = list(payload)
    if not all(isinstance(item, ModelManifest) for item in manifests):
        raise TypeError("the entry point's manifests are not all ModelManifest objects")
    return manifests


def find_broken_plugins(ours: str) -> list[BrokenPlugin]:
    """Every entry point of :data:`GROUP` but ``ours`` (an entry-point value) that fails to load."""
    entry_points = plugin_entry_points()
    values = [entry_point.value for entry_point in entry_points]
    our_position = values.index(ours) if ours in values else len(values)
    broken = []
    for position, entry_point in enumerate(entry_points):
        if entry_point.value == ours:
            continue
        try:
            load_manifests(entry_point)
        except Exception as exc:  # noqa: BLE001 - a third-party plugin's failure is reported, not raised
            broken.append(
                BrokenPlugin(
                    name=entry_point.name,
                    value=entry_point.value,
                    distribution=entry_point.dist.name if entry_point.dist else "unknown",
                    error=f"{type(exc).__name__}: {exc}",
                    before_ours=position < our_position,
                )
            )
    return broken
