"""The model's side of an official-code worker: runs a backend class in the model's own environment.

A model whose official code pins libraries the evaluator cannot share (Show-o2, BAGEL, OmniGen2) runs that code
in an environment of its own (``lmms-eval-unify env create MODEL``); the adapter, in the evaluator's environment,
drives it through :mod:`lmms_eval_unify.generation.worker`. This module is what runs on the other side:

    <model env>/bin/python -m lmms_eval_unify.generation.worker_main --backend MODULE:CLASS [--repo DIR] --exchange DIR

It imports nothing of this package beyond itself, and torch only when a call asks for a seed, so the official
code's pinned transformers/diffusers are the ones it sees; the official checkout (``--repo``) goes first on
``sys.path``, as when its own scripts run from inside it (its ``datasets/`` then shadows Hugging Face's).

The protocol, one JSON object per line:

* the worker reads the backend's configuration (a JSON object) as its first input line, builds
  ``CLASS(**configuration)`` and answers ``{"ready": true, "versions": {...}}`` or ``{"error": ...}``;
* then each request ``{"method": NAME, "args": [...], "kwargs": {...}, "seed": INT|null}`` is answered by
  ``{"result": ...}`` or ``{"error": {"type", "message", "traceback"}}`` (the worker goes on);
* images travel as files: ``{"__image__": "NAME.png"}`` names a lossless PNG in the exchange folder, both ways;
* end of input ends the worker.

Replies go out on the original standard output only; whatever the official code prints goes to standard error.
``--probe`` instead imports the backend's module and prints the problems its ``probe(configuration)`` finds
(official modules, their dependencies, checkpoints named in the official configuration), without building it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import itertools
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

IMAGE_KEY = "__image__"
REPORTED_PACKAGES = ("torch", "transformers", "diffusers", "huggingface-hub", "accelerate", "tokenizers")
"""Packages whose versions the worker reports once it is ready (recorded in the provenance of the run's
``model.json``)."""


def package_versions(names: tuple[str, ...] = REPORTED_PACKAGES) -> dict[str, str]:
    """The installed version of each of ``names`` this interpreter sees (absent ones are left out)."""
    found = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def load_backend_class(spec: str, repo: str | None) -> Any:
    """``MODULE:CLASS`` imported with the official checkout ``repo`` first on ``sys.path``."""
    if repo:
        root = str(Path(repo).resolve())
        if root not in sys.path:
            sys.path.insert(0, root)
    module_name, _, class_name = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, class_name) if class_name else module


@contextlib.contextmanager
def seeded_call(seed: int | None) -> Iterator[None]:
    """Torch's global generators (CPU and every visible GPU) seeded for one call and restored after it; nothing
    for ``seed=None``. The official code draws from them (VAE sampling, initial noise)."""
    if seed is None:
        yield
        return
    import torch

    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


def invoke(backend: Any, method: str, args: list[Any], kwargs: dict[str, Any], seed: int | None) -> Any:
    """``backend.method(*args, **kwargs)`` under ``seed``: the one way a backend is called, in a worker or in
    the evaluator's own process (``env=current``)."""
    if method.startswith("_"):
        raise AttributeError(f"{method!r} is private: a worker calls public backend methods only")
    with seeded_call(seed):
        return getattr(backend, method)(*args, **kwargs)


def encode(value: Any, exchange: Path, names: Iterator[int], prefix: str) -> Any:
    """``value`` with every PIL image written to ``exchange`` as a lossless PNG and replaced by its reference."""
    if hasattr(value, "save") and hasattr(value, "mode") and hasattr(value, "size"):
        name = f"{prefix}{next(names)}.png"
        value.save(exchange / name, format="PNG")
        return {IMAGE_KEY: name}
    if isinstance(value, list | tuple):
        return [encode(item, exchange, names, prefix) for item in value]
    if isinstance(value, dict):
        return {str(key): encode(item, exchange, names, prefix) for key, item in value.items()}
    return value


def open_image(path: Path) -> Any:
    """The image file ``path`` as a loaded PIL image (the worker reading what its own evaluator wrote)."""
    from PIL import Image

    with Image.open(path) as image:
        image.load()
    return image


def decode(value: Any, exchange: Path, read_image: Callable[[Path], Any] = open_image) -> Any:
    """``value`` with every image reference (a file name in ``exchange``, never a path out of it) read back by
    ``read_image``; the file is removed once read. The evaluator reads the model's images through its gate."""
    if isinstance(value, dict) and set(value) == {IMAGE_KEY}:
        path = exchange / Path(str(value[IMAGE_KEY])).name
        try:
            return read_image(path)
        finally:
            path.unlink(missing_ok=True)
    if isinstance(value, list):
        return [decode(item, exchange, read_image) for item in value]
    if isinstance(value, dict):
        return {key: decode(item, exchange, read_image) for key, item in value.items()}
    return value


def error_reply(exc: BaseException) -> dict[str, Any]:
    """A failed step as the worker reports it."""
    return {"error": {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}}


def serve(spec: str, repo: str | None, exchange: Path, requests: TextIO, replies: TextIO) -> None:
    """Build the backend ``spec`` from the first input line, then answer requests until the input ends."""

    def send(reply: dict[str, Any]) -> None:
        replies.write(json.dumps(reply) + "\n")
        replies.flush()

    names = itertools.count()
    try:
        configuration = json.loads(requests.readline() or "{}")
        backend = load_backend_class(spec, repo)(**configuration)
    except BaseException as exc:  # noqa: BLE001 - whatever the official code raises is reported, then we stop
        send(error_reply(exc))
        return
    send({"ready": True, "versions": package_versions(), "pid": os.getpid()})
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            args = decode(request.get("args", []), exchange)
            kwargs = decode(request.get("kwargs", {}), exchange)
            result = invoke(backend, request["method"], args, kwargs, request.get("seed"))
            send({"result": encode(result, exchange, names, "out-")})
        except Exception as exc:  # noqa: BLE001 - one failed request is that request's error; the worker goes on
            send(error_reply(exc))


def import_problems(
    model_id: str, modules: tuple[str, ...], importer: Callable[[str], Any] = importlib.import_module
) -> list[dict[str, str]]:
    """A backend's ``probe`` step: each of ``modules`` that does not import here (any error), as a problem."""
    problems = []
    for module in modules:
        try:
            importer(module)
        except Exception as exc:  # noqa: BLE001 - any import failure is the finding
            what = f"the official module {module!r} does not import in the model environment"
            problems.append(
                {
                    "kind": "code",
                    "what": f"{what} ({type(exc).__name__}: {exc})",
                    "fix": f"recreate it: lmms-eval-unify env create {model_id} (docs/models/{model_id}.md)",
                }
            )
    return problems


def probe(spec: str, repo: str | None, configuration: dict[str, Any]) -> list[dict[str, str]]:
    """What the backend lacks in this environment: its module does not import, or its module's
    ``probe(configuration)`` names problems (each ``{"kind", "what", "fix"}``)."""
    try:
        module = load_backend_class(spec.partition(":")[0], repo)
    except BaseException as exc:  # noqa: BLE001 - the official code's import error is the finding
        what = f"importing {spec.partition(':')[0]} fails in this environment ({type(exc).__name__}: {exc})"
        return [{"kind": "code", "what": what, "fix": ""}]
    check = getattr(module, "probe", None)
    return list(check(configuration)) if check else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", required=True, help="MODULE:CLASS of the backend")
    parser.add_argument("--repo", help="the official checkout, put first on sys.path")
    parser.add_argument("--exchange", help="folder where images are passed as PNG files")
    parser.add_argument("--probe", action="store_true", help="report what the backend lacks, then exit")
    options = parser.parse_args(argv)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the official code's prints must not reach the replies
    if options.probe:
        configuration = json.loads(sys.stdin.readline() or "{}")
        replies.write(json.dumps({"problems": probe(options.backend, options.repo, configuration)}) + "\n")
        replies.flush()
        return 0
    if not options.exchange:
        parser.error("--exchange is required unless --probe")
    serve(options.backend, options.repo, Path(options.exchange), sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
