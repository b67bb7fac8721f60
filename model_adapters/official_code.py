"""Locating models' official code that is not on PyPI (Show-o2, BAGEL, OmniGen2) and starting its backend.

The official code runs in the model's own environment (``lmms-eval-unify env create MODEL``), driven through a
worker (:mod:`lmms_eval_unify.generation.worker`); the adapter names the checkout, the backend class in
``model_adapters/official/`` and the upstream commit that backend was checked against. Anything missing
(checkout, environment, a module the official code imports there, weights) is a :class:`MissingOfficialCode`
error, or, before the model is built, a preflight item, that says what to install and where.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from loguru import logger

from lmms_eval_unify.adapter import (
    Backend,
    Missing,
    environment_python,
    missing_environment,
    missing_in_environment,
    start_backend,
)


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


def weights_folder(model_id: str, location: str, required: tuple[str, ...], argument: str = "pretrained") -> Path:
    """A weights folder holding ``required`` files: a local path, or a Hugging Face id already downloaded."""
    path = Path(location).expanduser()
    if not path.is_dir():
        try:
            from huggingface_hub import snapshot_download

            path = Path(snapshot_download(location))
        except Exception as exc:  # offline, unknown id, no access: one clear message
            raise MissingOfficialCode(
                f"{model_id}: weights {location!r} are neither a local folder nor downloadable ({exc}); "
                f"download them and pass --model_args {argument}=<folder>"
            ) from exc
    missing = [name for name in required if not (path / name).exists()]
    if missing:
        raise MissingOfficialCode(f"{model_id}: {path} lacks {', '.join(missing)} (model argument {argument})")
    return path


def checkout_commit(root: Path) -> str | None:
    """The commit the checkout at ``root`` (or the repository holding it) is at; ``None`` when not a git checkout
    or git is not installed."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def other_commit_warning(model_id: str, root: Path, checked: str | None) -> str | None:
    """A warning when the checkout is at a commit other than the one the backend was checked against (or when
    the backend was checked against none)."""
    if checked is None:
        return f"{model_id}: the adapter has not been checked against any commit of the official code"
    commit = checkout_commit(root)
    if commit is None or commit == checked:
        return None
    return (
        f"{model_id}: the official checkout {root} is at {commit[:12]}, and the adapter was checked against "
        f"{checked[:12]}; differences in the official code may change results (docs/models/{model_id}.md)"
    )


@dataclass(frozen=True)
class OfficialCode:
    """What an adapter runs of a model's official code: the checkout (named by the ``repo_path`` model argument
    or ``$env_var``; ``probe`` is a file it must hold), the backend class ``MODULE:CLASS`` in
    ``model_adapters/official/`` and the upstream commit that backend was checked against (``None``: none)."""

    model_id: str
    env_var: str
    url: str
    probe: str
    backend: str
    checked_commit: str | None

    def _located(self, settings: Any) -> tuple[Path | None, list[Missing]]:
        """The checkout and the model's environment, or what is missing of them; warns when the checkout is at
        another commit than the checked one."""
        problems = missing_checkout(self.model_id, settings.repo_path, self.env_var, self.url, self.probe)
        problems += missing_environment(self.model_id, settings.env)
        if problems:
            return None, problems
        root = self.checkout(settings)
        warning = other_commit_warning(self.model_id, root, self.checked_commit)
        if warning:
            logger.warning(warning)
        return root, []

    def missing(self, settings: Any, configuration: dict[str, Any]) -> list[Missing]:
        """The checkout, the model's environment, and what the backend's own probe finds there (official modules,
        their dependencies, by-name checkpoints; under a deadline, nothing built)."""
        root, problems = self._located(settings)
        if root is None:
            return problems
        return missing_in_environment(self.model_id, settings.env, self.backend, root, configuration)

    def checkout(self, settings: Any) -> Path:
        """The checkout the ``repo_path`` model argument or ``$env_var`` names."""
        return Path(str(settings.repo_path or os.environ.get(self.env_var))).expanduser().resolve()

    def provenance(self, settings: Any, backend: Backend) -> dict[str, Any]:
        """What ran: the checkout and the commit it is at (beside the one the backend was checked against), the
        environment's interpreter and the package versions the backend reported."""
        root = self.checkout(settings)
        python = environment_python(self.model_id, settings.env)
        return {
            "official_code": {
                "url": self.url,
                "checkout": str(root),
                "commit": checkout_commit(root),
                "checked_commit": self.checked_commit,
                "environment": str(python) if python else "current",
                "packages": dict(backend.versions),
            }
        }

    def start(self, settings: Any, configuration: dict[str, Any]) -> Backend:
        """The backend built with ``configuration`` in the model's environment, the checkout first on its
        ``sys.path``."""
        root, problems = self._located(settings)
        if root is None:
            raise MissingOfficialCode(f"{problems[0].what}: {problems[0].fix}")
        return start_backend(self.model_id, settings.env, self.backend, root, configuration)


class RunsOfficialCode:
    """An adapter whose primitives call a backend of ``official``: its provenance is the official code's."""

    official: ClassVar[OfficialCode]
    settings: Any
    backend: Backend

    def provenance(self) -> dict[str, Any]:
        return self.official.provenance(self.settings, self.backend)
