"""Locating and importing models' official code that is not on PyPI (Show-o2, Bagel, OmniGen2).

These adapters import the upstream repository lazily, when the model is built; anything missing (checkout,
a module it needs, weights) is a :class:`MissingOfficialCode` error that says what to install and where.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from lmms_eval_unify.generation.adapter import Missing


class MissingOfficialCode(RuntimeError):
    """The official code, a dependency of it, or the weights are not where the adapter looks."""


def missing_checkout(model_id: str, repo_path: str | None, env_var: str, repo_url: str, probe: str) -> list[Missing]:
    """The checkout named by the ``repo_path`` model argument or ``$env_var``, holding ``probe`` (a relative
    path), is missing or is not a checkout (the adapter's declared check; :func:`official_checkout` uses it)."""
    location = repo_path or os.environ.get(env_var)
    if not location:
        return [
            Missing(
                "code",
                f"{model_id} runs the official code of {repo_url} (not on PyPI), and no checkout of it is given",
                f"clone it and pass --model_args repo_path=<checkout> or set ${env_var}; see docs/models/{model_id}.md",
            )
        ]
    root = Path(location).expanduser().resolve()
    if not (root / probe).is_file():
        return [
            Missing(
                "code",
                f"{model_id}: {root} is not a checkout of {repo_url} (no {probe})",
                f"set repo_path / ${env_var} to the folder that contains {probe}",
            )
        ]
    return []


def official_checkout(model_id: str, repo_path: str | None, env_var: str, repo_url: str, probe: str) -> Path:
    """The checkout named by the ``repo_path`` model argument or ``$env_var``, put first on ``sys.path``.

    ``probe`` is a file that must exist in it (relative path), so a wrong folder fails here, clearly.
    """
    problems = missing_checkout(model_id, repo_path, env_var, repo_url, probe)
    if problems:
        raise MissingOfficialCode(f"{problems[0].what}: {problems[0].fix}")
    root = Path(str(repo_path or os.environ.get(env_var))).expanduser().resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root


def import_official(model_id: str, module: str, root: Path) -> ModuleType:
    """Import ``module`` from the checkout; a failure names the missing dependency and the install page."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingOfficialCode(
            f"{model_id}: cannot import {module} from {root} ({type(exc).__name__}: {exc}); install the "
            f"official requirements listed in docs/models/{model_id}.md"
        ) from exc


def local_weights(model_id: str, location: str, required: tuple[str, ...], argument: str = "pretrained") -> Path:
    """A weights folder holding ``required`` files: a local path, or a Hugging Face id already downloaded."""
    path = Path(location).expanduser()
    if not path.is_dir():
        try:
            from huggingface_hub import snapshot_download

            path = Path(snapshot_download(location))
        except Exception as exc:  # noqa: BLE001 - offline, unknown id, no access: one clear message
            raise MissingOfficialCode(
                f"{model_id}: weights {location!r} are neither a local folder nor downloadable ({exc}); "
                f"download them and pass --model_args {argument}=<folder>"
            ) from exc
    missing = [name for name in required if not (path / name).exists()]
    if missing:
        raise MissingOfficialCode(f"{model_id}: {path} lacks {', '.join(missing)} (model argument {argument})")
    return path
