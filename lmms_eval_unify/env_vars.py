"""The one registry of our environment variables: every ``LMMS_EVAL_UNIFY_*`` variable the code reads, with
its parser, what it means and how to fix a malformed value.

Code reads a variable only through :func:`read` (the registry's parser; an unregistered name is a
``KeyError``), so a value is parsed one way everywhere. :func:`malformed` checks every variable that is set:
the run preflight lists each malformed one as a problem with its fix (exit 2, nothing generated) and every
``lmms-eval-unify`` command refuses to start on one (exit 2). ``gate.limits`` reads ``$LMMS_EVAL_UNIFY_LIMITS``
with the same parser (``gate.parse_limits``), since the gate imports nothing of ours.

A benchmark adds ``LMMS_EVAL_UNIFY_<BENCHMARK>_METRICS`` here through the benchmark registry, and any
variable of its own as ``ENV_VARIABLES`` in its ``spec.py``. docs/limits.md lists the variables.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks import BENCHMARKS, part

PREFIX = "LMMS_EVAL_UNIFY_"
EXIT_MALFORMED = 2
"""Exit status of a command or run refused for a malformed variable (the preflight's status)."""


@dataclass(frozen=True)
class Variable:
    """One environment variable: ``name`` (one ``*`` makes it a family, e.g. ``..._CLIP_*_CKPT``), the
    ``parse`` of a non-blank value (``ValueError`` when malformed), what it ``means`` and the ``fix``."""

    name: str
    parse: Callable[[str], Any]
    means: str
    fix: str
    secret: bool = False
    """Never shown in a message (an API key)."""


class MalformedVariable(ValueError):
    """A set variable whose value does not parse; ``str()`` names the variable, the problem and the fix."""

    def __init__(self, variable: Variable, raw: str, detail: str) -> None:
        self.variable, self.raw, self.detail = variable, raw, detail
        shown = "(hidden)" if variable.secret else repr(raw if len(raw) <= 80 else raw[:77] + "...")
        self.what = f"${variable.name} {detail}, got {shown}"
        super().__init__(f"{self.what}; fix: {variable.fix}")


# ---- parsers: a non-blank raw value -> its value, or ValueError saying what is expected ------------------
def text(raw: str) -> str:
    """Any text (a name, a key)."""
    return raw


def path(raw: str) -> str:
    """A file or folder path, ``~`` expanded."""
    return os.path.expanduser(raw)


def paths(raw: str) -> list[str]:
    """Paths separated by ``os.pathsep`` (empty entries skipped), ``~`` expanded."""
    return [os.path.expanduser(p) for p in raw.split(os.pathsep) if p]


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def flag(raw: str) -> bool:
    """A switch: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off`` (any case)."""
    value = raw.strip().lower()
    if value not in _TRUE | _FALSE:
        raise ValueError("must be 1 or 0 (or true/false, yes/no, on/off)")
    return value in _TRUE


def positive_int(raw: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError("must be a whole number of at least 1")
    return value


def positive_seconds(raw: str) -> float:
    """A finite number of seconds above 0."""
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise ValueError("must be a positive number of seconds")
    return value


def json_object(raw: str) -> dict[str, Any]:
    """A JSON object."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"is not JSON ({str(exc)[:100]})") from None
    if not isinstance(value, dict):
        raise ValueError(f"must be a JSON object, not {type(value).__name__}")
    return value


def json_objects(raw: str) -> dict[str, dict[str, Any]]:
    """A JSON object whose every value is an object (name -> settings)."""
    value = json_object(raw)
    wrong = sorted(key for key, item in value.items() if not isinstance(item, dict))
    if wrong:
        raise ValueError(f"must map each name to a JSON object of settings; not an object: {wrong[:5]}")
    return value


def http_url(raw: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    try:
        parts = urlsplit(raw.strip())
    except ValueError as exc:
        raise ValueError(f"is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL with a host")
    return raw.strip()


def choice(*options: str) -> Callable[[str], str]:
    """One of ``options`` (exactly)."""

    def parse(raw: str) -> str:
        if raw.strip() not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return raw.strip()

    return parse


def device(raw: str) -> str:
    """``auto`` or a torch device: ``cpu``, ``cuda``, ``cuda:1``, ``mps`` ..."""
    if not re.fullmatch(r"[a-z]+(:\d+)?", raw.strip()):
        raise ValueError("must be auto or a torch device such as cpu, cuda, cuda:1")
    return raw.strip()


def limits(raw: str) -> gate.Limits:
    """The gate's limits (``gate.parse_limits``)."""
    return gate.parse_limits(raw)


# ---- the registry ----------------------------------------------------------------------------------------
_WEIGHTS_FIX = "the path of the checkpoint file (docs/metrics.md, Backbones)"
CORE: tuple[Variable, ...] = (
    Variable(
        "LMMS_EVAL_UNIFY_DATA_DIR",
        path,
        "local data folder every task reads instead of the Hub",
        "a folder written by `lmms-eval-unify data generate --out DIR` or `data prepare`",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_OUTPUT_DIR",
        path,
        "where models write images (default <--output_path>/unify_media)",
        "a writable folder",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_MEDIA_ROOTS",
        paths,
        f"extra folders ({os.pathsep!r}-separated) scorers, score, gallery and export may read images from",
        f"folders separated by {os.pathsep!r}",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_SKIP_PREFLIGHT",
        flag,
        "skip the run preflight (data, judges, metric weights, model); malformed variables are still refused",
        "1 to skip, 0 or unset to check",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_LIMITS",
        limits,
        "size limits of the gate, a JSON object of gate.Limits fields (docs/limits.md)",
        'a JSON object of positive integers, e.g. {"text_chars": 500000}',
    ),
    Variable(
        "LMMS_EVAL_UNIFY_MODEL_ENVS",
        path,
        "folder holding one environment per official-code model (default ~/.cache/lmms_eval_unify/envs)",
        "a folder path",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_PROBE_TIMEOUT",
        positive_seconds,
        "seconds the preflight gives a model environment to import the official code (default 120)",
        "a positive number of seconds, e.g. 300",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_JUDGE_BASE_URL",
        http_url,
        "the OpenAI-compatible judge endpoint (docs/judges.md)",
        "e.g. http://HOST:PORT/v1",
    ),
    Variable("LMMS_EVAL_UNIFY_JUDGE_MODEL", text, "the judge model name (default: the template's)", "a model name"),
    Variable("LMMS_EVAL_UNIFY_JUDGE_API_KEY", text, "the judge API key", "the key, or none", secret=True),
    Variable(
        "LMMS_EVAL_UNIFY_JUDGE_CACHE",
        path,
        "the judge reply cache file (default <media base>/judge_cache.sqlite)",
        "a writable file path, e.g. /data/judge_cache.sqlite",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_JUDGE_CONCURRENCY",
        positive_int,
        "judge requests in flight at once (default 8)",
        "a whole number of at least 1, e.g. 16",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_JUDGE_TIMEOUT",
        positive_seconds,
        "deadline of one whole judge request in seconds (default 300); one judgement, retries included, gets twice it",
        "a positive number of seconds, e.g. 600",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY",
        json_object,
        "extra fields of every judge request body",
        'a JSON object, e.g. {"reasoning": {"enabled": true}}',
    ),
    Variable(
        "LMMS_EVAL_UNIFY_TINY_METRICS",
        flag,
        "every metric on its tiny random backbone (offline trials; scores not comparable to papers)",
        "1 for tiny backbones, 0 or unset for the real ones",
    ),
    Variable("LMMS_EVAL_UNIFY_DEVICE", device, "device of the metric backbones (default auto)", "e.g. cuda:0 or cpu"),
    Variable(
        "LMMS_EVAL_UNIFY_METRIC_DTYPE",
        choice("auto", "fp32", "bf16", "fp16"),
        "autocast dtype of the metric encoders",
        "one of auto, fp32, bf16, fp16",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_METRIC_BATCH_SIZE",
        positive_int,
        "batch size of the metric encoders (default 32)",
        "a whole number of at least 1",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_METRIC_VARIANT",
        choice("official", "standard"),
        "metric variant: the papers' official code or the textbook metrics",
        "official or standard",
    ),
    *(
        Variable(f"{PREFIX}{family}_BACKBONE", text, f"backbone of the {family.lower()} metric", "a backbone name")
        for family in ("CLIP_SCORE", "CLIP_CHOICE", "LPIPS", "DREAMSIM", "FID", "FVD")
    ),
    *(
        Variable(f"{PREFIX}{name}", path, f"local checkpoint of the {what}", _WEIGHTS_FIX)
        for name, what in (
            ("CLIP_L14_CKPT", "CLIP ViT-L-14 backbone"),
            ("CLIP_B32_CKPT", "CLIP ViT-B-32 backbone"),
            ("CLIP_*_CKPT", "CLIP backbone of that architecture"),
            ("ALEXNET_CKPT", "LPIPS AlexNet trunk"),
            ("VGG16_CKPT", "LPIPS VGG-16 trunk"),
            ("INCEPTION_V3_CKPT", "official FID Inception-v3"),
            ("RESNET50_CKPT", "official FVD ResNet-50"),
            ("FID_INCEPTION_CKPT", "standard FID TF-Inception"),
            ("I3D_CKPT", "standard FVD I3D"),
        )
    ),
    Variable(
        "LMMS_EVAL_UNIFY_DREAMSIM_DIR",
        path,
        "folder of the unzipped DreamSim release checkpoint",
        "the folder holding the unzipped checkpoint (docs/metrics.md)",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_ALLOW_DOWNLOADS",
        flag,
        "let open_clip download missing CLIP weights",
        "1 to allow, 0 or unset to refuse",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_DECODE_WORKERS",
        positive_int,
        "threads that read and decode image files (default min(8, cores))",
        "a whole number of at least 1",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_LOCK_WAIT",
        positive_seconds,
        "seconds a second writer waits for a folder another command is writing (default 600)",
        "a positive number of seconds, e.g. 3600",
    ),
    Variable(
        "LMMS_EVAL_UNIFY_CACHE",
        path,
        "our cache folder (default ~/.cache/lmms_eval_unify): the tiny DreamSim checkpoint",
        "a writable folder",
    ),
)
"""The variables of the shared code."""


def metrics_env(benchmark: str) -> str:
    """``LMMS_EVAL_UNIFY_<BENCHMARK>_METRICS``: the metric settings of ``benchmark``'s scorers."""
    return f"{PREFIX}{benchmark.upper()}_METRICS"


def benchmark_variables(benchmark: str) -> tuple[Variable, ...]:
    """:func:`metrics_env` and the ``ENV_VARIABLES`` of the benchmark's ``spec.py``."""
    metrics = Variable(
        metrics_env(benchmark),
        json_objects,
        f"metric settings of the {benchmark} scorers: family -> MetricConfig fields",
        'a JSON object of objects, e.g. {"clip_score": {"device": "cpu"}}',
    )
    return (metrics, *getattr(part(benchmark, "spec"), "ENV_VARIABLES", ()))


@cache
def registry() -> dict[str, Variable]:
    """Every variable by name (a family by its pattern)."""
    variables = [*CORE, *(v for benchmark in BENCHMARKS for v in benchmark_variables(benchmark))]
    return {variable.name: variable for variable in variables}


def variable(name: str) -> Variable:
    """The registered variable ``name`` (or the family it belongs to); ``KeyError`` when it is not registered."""
    known = registry()
    if name in known:
        return known[name]
    for pattern, found in known.items():
        if "*" in pattern and fnmatch.fnmatchcase(name, pattern):
            return found
    raise KeyError(f"{name} is not in the registry of lmms_eval_unify.env_vars: register it there")


def parse(name: str, raw: str | None) -> Any:
    """``raw`` parsed as the value of ``name``: None when unset or blank; ``MalformedVariable`` when it does
    not parse."""
    found = variable(name)
    if raw is None or not raw.strip():
        return None
    try:
        return found.parse(raw)
    except ValueError as exc:
        raise MalformedVariable(found, raw, str(exc)) from None


def read(name: str) -> Any:
    """The parsed value of the environment variable ``name`` (None when unset or blank)."""
    return parse(name, os.environ.get(name))


def malformed(environ: Mapping[str, str] | None = None) -> list[MalformedVariable]:
    """Every registered variable set in ``environ`` (default ``os.environ``) whose value does not parse."""
    environ = os.environ if environ is None else environ
    found = []
    for name in sorted(n for n in environ if n.startswith(PREFIX)):
        try:
            parse(name, environ[name])
        except KeyError:
            continue  # not ours to judge (a test's own switch, a variable of a newer version)
        except MalformedVariable as problem:
            found.append(problem)
    return found


def render(problems: list[MalformedVariable]) -> str:
    """The block a command prints when it refuses to start."""
    lines = [f"lmms-eval-unify: {len(problems)} malformed environment variable(s); nothing was done:"]
    for problem in problems:
        lines += [f"  {problem.what}", f"      fix: {problem.variable.fix}"]
    return "\n".join(lines)
