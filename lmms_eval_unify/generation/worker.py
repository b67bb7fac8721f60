"""The evaluator's side of an official-code worker: a model's backend running in the model's own environment.

Show-o2, BAGEL and OmniGen2 pin transformers/diffusers/huggingface-hub versions that lmms-eval and this plugin
cannot import beside (docs/architecture.md, "Official code in its own environment"). Their adapters therefore
keep only the primitives here and hand every call of the official code to a *backend*: a class in
``model_adapters/official/`` that runs, unchanged, in a child process started with the model environment's
interpreter (:mod:`lmms_eval_unify.generation.worker_main` is the child). Arguments and results are JSON; images
pass as lossless PNG files in a private temporary folder, removed when the worker closes.

``env=current`` runs the same backend class in this process, through the same :func:`worker_main.invoke` (for an
environment that already holds the official requirements, and for tests of an adapter's glue).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from loguru import logger

from lmms_eval_unify import gate
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.generation import worker_main
from lmms_eval_unify.generation.readiness import Missing
from lmms_eval_unify.output.media_reader import check_image_bytes

MODEL_ENVS_ENV = "LMMS_EVAL_UNIFY_MODEL_ENVS"
"""The folder holding one environment per official-code model (default ``~/.cache/lmms_eval_unify/envs``)."""
CURRENT = "current"
"""The ``env`` model argument that runs the official code in the evaluator's own process."""
PROBE_TIMEOUT_ENV = "LMMS_EVAL_UNIFY_PROBE_TIMEOUT"
DEFAULT_PROBE_TIMEOUT = 120.0
"""Seconds the preflight gives the model environment to import the official code (its first import of torch
and transformers compiles nothing, but a cold disk can take a minute)."""
STDERR_TAIL = 4000


class WorkerError(RuntimeError):
    """The official code raised in the worker (one request), or the worker itself stopped."""


def model_envs_root() -> Path:
    """Where ``lmms-eval-unify env create`` puts a model's environment by default."""
    return Path(read(MODEL_ENVS_ENV) or Path.home() / ".cache" / "lmms_eval_unify" / "envs").expanduser()


def environment_python(model_id: str, env: str | None) -> Path | None:
    """The interpreter of ``model_id``'s environment: ``env`` (an environment folder or its python), else
    ``$LMMS_EVAL_UNIFY_MODEL_ENVS/<model_id>``; ``None`` for ``env=current`` (this process)."""
    if env == CURRENT:
        return None
    location = Path(env).expanduser() if env else model_envs_root() / model_id
    if location.is_dir():
        return location / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    return location


ENVIRONMENT_MARKER = "lmms_eval_unify_env.json"
"""What ``env create`` records in an environment it made: the model, its pins file and that file's sha256."""


def stale_environment_warning(python: Path) -> str | None:
    """A warning when the environment holding ``python`` was made from pins that have changed since (its marker
    names the pins file and their sha256); ``None`` for an up-to-date environment or one we did not make."""
    root = python.parent.parent
    if not (root / ENVIRONMENT_MARKER).is_file():
        return None
    try:
        marker = gate.read_json(root / ENVIRONMENT_MARKER, "record", [root])
        if not isinstance(marker, dict):
            raise TypeError("not a JSON object")
        pins, recorded, model = Path(str(marker["pins"])), str(marker["pins_sha256"]), str(marker["model"])
        current = hashlib.sha256(pins.read_bytes()).hexdigest() if pins.is_file() else None
    except (gate.Refused, KeyError, TypeError, OSError) as exc:
        return f"{root}: its {ENVIRONMENT_MARKER} cannot be read ({exc}); recreate the environment if in doubt"
    if current == recorded:
        return None
    return f"{root} was made from other pins than {pins} now holds: `lmms-eval-unify env create {model} --into {root}`"


def missing_environment(model_id: str, env: str | None) -> list[Missing]:
    """The model's environment does not exist (or its interpreter is not executable); warns when it was made
    from pins that have changed since."""
    python = environment_python(model_id, env)
    if python is None:
        return []
    if python.is_file() and os.access(python, os.X_OK):
        warning = stale_environment_warning(python)
        if warning:
            logger.warning(f"{model_id}: {warning}")
        return []
    where = f"env={env!r}" if env else f"${MODEL_ENVS_ENV}/{model_id} = {python.parent.parent}"
    return [
        Missing(
            "code",
            f"{model_id} runs its official code in an environment of its own (its pins conflict with this one's), "
            f"and there is none at {where} (no interpreter {python})",
            f"`bash scripts/install.sh --model {model_id}` (or `lmms-eval-unify env create {model_id}`), or pass "
            f"--model_args env=<a virtualenv holding the official requirements>; env={CURRENT} uses this one",
        )
    ]


def probe_timeout() -> float:
    """The preflight's deadline for importing the official code in the model environment (a malformed
    ``$LMMS_EVAL_UNIFY_PROBE_TIMEOUT`` raises ``env_vars.MalformedVariable``, a ``ValueError``)."""
    seconds: float | None = read(PROBE_TIMEOUT_ENV)
    return DEFAULT_PROBE_TIMEOUT if seconds is None else seconds


def worker_command(python: Path | str, backend: str, repo: Path | None, *extra: str) -> list[str]:
    """The command line of a worker (or of its ``--probe``)."""
    command = [str(python), "-m", "lmms_eval_unify.generation.worker_main", "--backend", backend, *extra]
    return command + (["--repo", str(repo)] if repo else [])


def missing_in_environment(
    model_id: str,
    env: str | None,
    backend: str,
    repo: Path | None,
    configuration: dict[str, Any],
    timeout: float | None = None,
) -> list[Missing]:
    """What the backend lacks where it will run: the official modules do not import there, or the backend's own
    ``probe`` names something (dependencies, checkpoints its official configuration loads by name). Runs in a
    child process of the model's interpreter (this one's for ``env=current``) under a deadline; nothing is
    built or loaded."""
    python = environment_python(model_id, env) or Path(sys.executable)
    timeout = probe_timeout() if timeout is None else timeout
    fix = f"install the official requirements in that environment (docs/models/{model_id}.md)"
    try:
        done = subprocess.run(
            worker_command(python, backend, repo, "--probe"),
            input=json.dumps(configuration) + "\n",
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        what = f"{model_id}: importing its official code with {python} did not finish within {timeout:g} s"
        return [Missing("code", what, f"check that environment by hand, or raise ${PROBE_TIMEOUT_ENV}")]
    except OSError as exc:
        return [Missing("code", f"{model_id}: cannot start {python} ({exc})", fix)]
    try:
        last = done.stdout.strip().splitlines()[-1]
        gate.check_text(last, "record", f"the {model_id} environment's check")
        problems = gate.parse_json(last, f"the {model_id} environment's check")["problems"]  # type: ignore[index]
    except (IndexError, KeyError, TypeError, gate.Refused):
        tail = done.stderr.strip()[-STDERR_TAIL:] or "(nothing on stderr)"
        what = f"{model_id}: the model environment's check failed (exit {done.returncode}): {tail}"
        return [Missing("code", what, fix)]
    return [
        Missing(str(item.get("kind", "code")), f"{model_id}: {item.get('what', '')}", str(item.get("fix") or fix))
        for item in problems
        if isinstance(item, dict)
    ]


def child_environment() -> dict[str, str]:
    """The worker's environment variables: this process's, with output unbuffered."""
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


class Backend(Protocol):
    """A running backend: ``call`` a public method of the backend class, under an optional per-call seed."""

    versions: dict[str, str]

    def call(self, method: str, *args: Any, seed: int | None = None, **kwargs: Any) -> Any: ...

    def close(self) -> None: ...


@dataclass
class InProcessBackend:
    """The backend class built in this process (``env=current``)."""

    instance: Any
    versions: dict[str, str] = field(default_factory=worker_main.package_versions)

    def call(self, method: str, *args: Any, seed: int | None = None, **kwargs: Any) -> Any:
        return worker_main.invoke(self.instance, method, list(args), kwargs, seed)

    def close(self) -> None:
        self.instance = None


class WorkerBackend:
    """The backend class built in a child process of the model environment's interpreter.

    Calls are serialised (one request in flight); a request the official code fails raises :class:`WorkerError`
    with the official traceback, and the worker goes on; a worker that died raises it with its stderr's tail.
    """

    def __init__(
        self, model_id: str, python: Path, backend: str, repo: Path | None, configuration: dict[str, Any]
    ) -> None:
        self.model_id = model_id
        self.exchange = Path(tempfile.mkdtemp(prefix=f"lmms_eval_unify_{model_id}_"))
        self._log = (self.exchange / "worker.stderr").open("w+", encoding="utf-8", errors="replace")
        self._process = subprocess.Popen(
            worker_command(python, backend, repo, "--exchange", str(self.exchange)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            env=child_environment(),
        )
        self._lock = threading.Lock()
        self._names = iter(range(1 << 62))
        self._finalizer = weakref.finalize(self, _stop, self._process, self._log, self.exchange)
        try:
            reply = self._exchange(json.dumps(configuration))
        except BaseException:
            self.close()
            raise
        self.versions: dict[str, str] = dict(reply.get("versions") or {})

    def _stderr_tail(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()[-STDERR_TAIL:].strip() or "(nothing on stderr)"

    def _exchange(self, line: str) -> dict[str, Any]:
        """Send one line, read one reply; a worker that stopped or garbled its reply is a :class:`WorkerError`."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        bound = gate.limit("record")
        try:
            stdin.write(line + "\n")
            stdin.flush()
            answer = stdout.readline(bound + 1)
        except (BrokenPipeError, OSError):
            answer = ""
        if not answer:
            code = self._process.wait(timeout=30)
            raise WorkerError(f"{self.model_id} worker stopped (exit {code}): {self._stderr_tail()}")
        if len(answer) > bound:
            self.close()  # the rest of that line would be read as the next reply
            raise WorkerError(f"{self.model_id} worker reply is over the gate's record limit ({bound} characters)")
        try:
            reply = gate.parse_json(answer, f"the {self.model_id} worker's reply")
        except gate.Refused as exc:
            raise WorkerError(f"{self.model_id} worker replied with no JSON object: {exc}") from exc
        if not isinstance(reply, dict):
            raise WorkerError(f"{self.model_id} worker replied with no JSON object: {answer[:200]!r}")
        if "error" in reply:
            error = reply["error"]
            raise WorkerError(
                f"{self.model_id} official code raised {error.get('type')}: {error.get('message')}\n"
                f"{error.get('traceback', '')}".rstrip()
            )
        return reply

    def call(self, method: str, *args: Any, seed: int | None = None, **kwargs: Any) -> Any:
        with self._lock:
            request = {
                "method": method,
                "args": worker_main.encode(list(args), self.exchange, self._names, "in-"),
                "kwargs": worker_main.encode(kwargs, self.exchange, self._names, "in-"),
                "seed": seed,
            }
            reply = self._exchange(json.dumps(request))
            return worker_main.decode(reply.get("result"), self.exchange, self._read_image)

    def _read_image(self, path: Path) -> Any:
        """An image the model's code returned, read through the gate: a regular file in the exchange folder within
        the byte and pixel limits, checked before it is decoded."""
        from PIL import Image

        raw = gate.read_bytes(path, "image", [self.exchange])
        check_image_bytes(raw, f"an image of the {self.model_id} worker")
        image = Image.open(io.BytesIO(raw))
        image.load()
        return image

    def close(self) -> None:
        """Stop the worker and remove its exchange folder."""
        self._finalizer()


def _stop(process: subprocess.Popen, log: Any, exchange: Path) -> None:
    if process.stdin:
        try:
            process.stdin.close()
        except OSError:
            pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
    shutil.rmtree(exchange, ignore_errors=True)


def start_backend(
    model_id: str, env: str | None, backend: str, repo: Path | None, configuration: dict[str, Any]
) -> Backend:
    """The backend ``MODULE:CLASS`` built with ``configuration``: in a worker of the model environment, or in this
    process for ``env=current``."""
    python = environment_python(model_id, env)
    if python is None:
        return InProcessBackend(worker_main.load_backend_class(backend, str(repo) if repo else None)(**configuration))
    problems = missing_environment(model_id, env)
    if problems:
        raise WorkerError(f"{problems[0].what}: {problems[0].fix}")
    return WorkerBackend(model_id, python, backend, repo, configuration)
