"""What the running evaluation is: its ``--output_path``, model and tasks, known without reading ``sys.argv``.

The plugin learns them when lmms-eval calls ``simple_evaluate`` (``lmms_eval_unify.integration.run_hooks``), which is
before the model is built; a Python caller can also enter :func:`run_context` itself. Everything that used
to guess the run's folders from the command line asks here instead:

* the media base (where models write images): the model argument ``output_dir`` > ``$LMMS_EVAL_UNIFY_OUTPUT_DIR``
  > ``<output_path>/unify_media`` > ``./lmms_eval_unify_outputs``;
* the judge cache: ``$LMMS_EVAL_UNIFY_JUDGE_CACHE`` > ``<media base>/judge_cache.sqlite``;
* the roots a scorer may read generated media from (:func:`trusted_media_roots`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lmms_eval_unify.env_vars import read

OUTPUT_DIR_ENV = "LMMS_EVAL_UNIFY_OUTPUT_DIR"
EXTRA_MEDIA_ROOTS_ENV = "LMMS_EVAL_UNIFY_MEDIA_ROOTS"
"""``os.pathsep``-separated extra folders scorers may read images from (e.g. an external model's output
folder for records in the upstream ``{"text", "images": [absolute paths]}`` form)."""
DEFAULT_OUTPUT_DIR = "lmms_eval_unify_outputs"
MEDIA_SUBDIR = "unify_media"


@dataclass
class RunContext:
    """The evaluation in progress (all fields optional: a bare Python caller may know none of them)."""

    output_path: str | None = None
    model: str | None = None
    model_args: str = ""
    tasks: list[str] = field(default_factory=list)
    media_base: str | None = None
    """Set by ``lmms-eval-unify score``: the saved run's media folder, read instead of the default."""
    trusted_roots: list[str] = field(default_factory=list)
    """Media roots models of this run write to (a model built with ``output_dir=`` registers its own)."""


_current: RunContext | None = None


def current() -> RunContext:
    """The run in progress, or an empty context when none was entered."""
    return _current or RunContext()


def set_current(context: RunContext | None) -> None:
    """Make ``context`` the run in progress (``None`` clears it)."""
    global _current
    _current = context


@contextlib.contextmanager
def run_context(**fields: object) -> Iterator[RunContext]:
    """Enter a run context for the block (restoring the previous one after)."""
    previous = _current
    context = RunContext(**fields)  # type: ignore[arg-type]
    set_current(context)
    try:
        yield context
    finally:
        set_current(previous)


def media_base(explicit: str | None = None) -> Path:
    """The media base directory, following the documented precedence (absolute)."""
    context = current()
    if explicit:
        return Path(explicit).resolve()
    if context.media_base:
        return Path(context.media_base).resolve()
    if configured := read(OUTPUT_DIR_ENV):
        return Path(configured).resolve()
    if context.output_path:
        return (Path(context.output_path) / MEDIA_SUBDIR).resolve()
    return Path(DEFAULT_OUTPUT_DIR).resolve()


def trust_media_root(root: str | Path) -> None:
    """Let scorers of this run read media under ``root`` (called by a model for its own media root)."""
    global _current
    if _current is None:
        _current = RunContext()
    resolved = str(Path(root).resolve())
    if resolved not in _current.trusted_roots:
        _current.trusted_roots.append(resolved)


def trusted_media_roots() -> list[Path]:
    """Folders a scorer may read generated media from: the media base, the roots models of this run
    registered, and ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``."""
    extra = read(EXTRA_MEDIA_ROOTS_ENV) or []
    return [media_base(), *(Path(p).resolve() for p in [*current().trusted_roots, *extra])]
