"""``lmms-eval-unify doctor``: can lmms-eval load every model plugin, ours included?

lmms-eval 0.7.3 loads the ``lmms_eval.models`` entry points in order and stops at the first that fails,
with one vague warning. A broken plugin it reaches before ours hides our models: ``lmms-eval --model
unify_oracle`` then fails as an unknown model, and no code of ours runs to say why. This command loads each
plugin on its own, names every one that fails (entry point, distribution, error, fix), and checks that
lmms-eval's registry holds our models. Exit status 1 when something is broken, 0 otherwise.
"""

from __future__ import annotations

import argparse
from importlib import metadata

from lmms_eval_unify.integration.broken_plugins import (
    GROUP,
    BrokenPlugin,
    find_broken_plugins,
    plugin_entry_points,
)
from lmms_eval_unify.integration.plugin import ENTRY_POINT, MODELS, version_hint

REGISTRY_CHECK = (
    "python -c 'from lmms_eval.models import MODEL_REGISTRY_V2; "
    'print("unify_oracle" in MODEL_REGISTRY_V2.list_model_names())\''
)
"""A command that prints whether lmms-eval's model registry holds our models."""


def missing_models() -> list[str]:
    """Our model ids that lmms-eval's model registry (built when ``lmms_eval.models`` loads) does not map to
    our classes: absent, or left to a built-in model of the same name (lmms-eval has its own ``bagel``)."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    registered = set(MODEL_REGISTRY_V2.list_model_names())
    return sorted(
        name
        for name, class_path in MODELS.items()
        if name not in registered or MODEL_REGISTRY_V2.get_manifest(name).simple_class_path != class_path
    )


def report(entry_points: list[metadata.EntryPoint], broken: list[BrokenPlugin], missing: list[str]) -> str:
    """The findings: the plugins in load order, each broken one with its fix, and our models' state."""
    failing = {plugin.value for plugin in broken}
    lines = [f"model plugins ({GROUP} entry points), in the order lmms-eval loads them:"]
    for position, entry_point in enumerate(entry_points, 1):
        state = "ours" if entry_point.value == ENTRY_POINT else "FAILS" if entry_point.value in failing else "ok"
        distribution = entry_point.dist.name if entry_point.dist else "unknown"
        lines.append(f"  {position}. {entry_point.name} = {entry_point.value} ({distribution}): {state}")
    for plugin in broken:
        hides = "our models" if plugin.before_ours else "the models of every plugin after it"
        lines += [
            f"broken: {plugin.describe()}",
            f"  it comes {'before' if plugin.before_ours else 'after'} ours, so lmms-eval loses {hides}",
            f"  fix: {plugin.fix()}",
        ]
    if broken:
        lines.append(
            "lmms-eval 0.7.3 stops loading model plugins at the first one that fails, so a broken plugin that "
            "comes before ours hides our models: `lmms-eval --model unify_oracle` then fails as an unknown "
            "model. The order above is the order of the distributions on sys.path (PYTHONPATH first). "
            f"Check whether lmms-eval sees our models with: {REGISTRY_CHECK}"
        )
    if missing:
        cause = "" if any(p.before_ours for p in broken) else f" ({version_hint()}; see the error logged above)"
        lines.append(f"lmms-eval does not serve our models {', '.join(missing)}{cause}")
    else:
        lines.append(f"lmms-eval serves all {len(MODELS)} models of lmms-eval-unify")
    lines.append("something is broken" if broken or missing else "every model plugin loads")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print the findings; 1 when a plugin is broken or our models are missing, else 0."""
    parser = argparse.ArgumentParser(
        prog="lmms-eval-unify doctor",
        description="Check that lmms-eval can load every model plugin (ours included); name the broken ones.",
    )
    parser.parse_args(argv)
    broken = find_broken_plugins(ENTRY_POINT)
    missing = missing_models()
    print(report(plugin_entry_points(), broken, missing))
    return 1 if broken or missing else 0
