"""The one import path for model adapters: everything an adapter takes from the core.

Adapters (``model_adapters/`` here, or a package of your own) import core names from this module only, so
the modules behind it can move without breaking them (docs/adding_a_model.md):

* the base class and its settings: :class:`UnifiedModel`, :class:`ModelSettings`, :func:`run_only`,
  ``PARSE`` (a field's own ``--model_args`` parser), :class:`ModelArgumentError`, and :class:`RequestInfo` (the
  request an adapter is answering, in its attribute of that name);
* the capability vocabulary: the primitive names and the sets adapters declare as ``UnifiedModel.capabilities``;
* torch helpers: :func:`seeded`, :func:`decoding_options`, :func:`resolve_device`, :func:`resolve_dtype`;
* for the baseline instruments, the task's answer space: :class:`InstrumentPlan`, :func:`load_answer_space`;
* for replaying saved runs, the output contract and the run's bookkeeping: :class:`UnifiedOutput`,
  ``SCHEMA``, :func:`clean_text`, :func:`saved_responses`, :func:`saved_media_roots`, :func:`trust_media_root`,
  ``run_status``, and :func:`generation_arguments` (a request's arguments, read through the checked seam);
* the check every adapter declares (``UnifiedModel.missing``): :class:`Missing`, :func:`missing_code`,
  :func:`missing_weights`, :func:`missing_weight_file` (one file, present and loadable), :func:`missing_device`,
  :func:`missing_env`, and :func:`model_missing` (another adapter's check, for adapters built from others);
* for official code that runs in the model's own environment (docs/architecture.md): :func:`start_backend` (a
  backend class in a worker of that environment, or in this process), :class:`Backend` (what it returns),
  :class:`WorkerError`, :func:`missing_environment` and :func:`missing_in_environment` (the preflight's checks
  of that environment), :func:`environment_python` (its interpreter);
* for models behind an HTTP API, the judge client's rules: :class:`DeadlineClient` (a deadline on each whole
  request, no redirects; :class:`DeadlineExceeded` when it passes), :func:`redirect_error`, :func:`read_body` (a
  body within the gate's limit), :func:`redact` (an API key in any encoding), :class:`RetryPolicy`,
  ``RETRYABLE_STATUS`` and :func:`parse_retry_after` (what is retried, how long to wait), :func:`parse_json`
  (a reply body, or the gate's :class:`Refused`), :func:`reply_content` (the text of a chat-completions reply),
  :func:`check_image_bytes` (an encoded image within the gate's limits, checked before decoding), and for
  :meth:`UnifiedModel.provenance`, :class:`ServerFacts` (what replies reveal of their server) and
  :func:`probe_server` (what a server says of itself: listed models, version);
* for models that write image files themselves (the upstream bridge): :func:`read_bytes` (a file through the gate:
  confined to the given folders, symlinks resolved, a regular file within the limit of its kind),
  :func:`check_image_bytes` again, and ``DECODE_ERRORS`` (what PIL raises on bytes that are not a whole image).
"""

from lmms_eval_unify.gate import Refused, parse_json, read_bytes
from lmms_eval_unify.generation.answer_spaces import InstrumentPlan, load_answer_space
from lmms_eval_unify.generation.devices import decoding_options, resolve_device, resolve_dtype, seeded
from lmms_eval_unify.generation.primitives import (
    ALL_PRIMITIVES,
    GENERATE_IMAGE,
    GENERATE_VIDEO,
    UNDERSTAND,
    UNDERSTAND_AND_GENERATE,
    UNDERSTAND_VIDEO,
    UNDERSTANDING_ONLY,
    RequestInfo,
)
from lmms_eval_unify.generation.readiness import (
    Missing,
    missing_code,
    missing_device,
    missing_env,
    missing_weight_file,
    missing_weights,
    model_missing,
)
from lmms_eval_unify.generation.settings import PARSE, ModelArgumentError, ModelSettings, run_only
from lmms_eval_unify.generation.worker import (
    Backend,
    WorkerError,
    environment_python,
    missing_environment,
    missing_in_environment,
    start_backend,
)
from lmms_eval_unify.integration.model import UnifiedModel
from lmms_eval_unify.integration.seams import generation_arguments
from lmms_eval_unify.judges.client import reply_content
from lmms_eval_unify.judges.http import (
    RETRYABLE_STATUS,
    DeadlineClient,
    DeadlineExceeded,
    EndpointError,
    HttpEndpoint,
    RetryPolicy,
    ServerFacts,
    parse_retry_after,
    probe_server,
    read_body,
    redact,
    redirect_error,
)
from lmms_eval_unify.output.media_reader import DECODE_ERRORS, check_image_bytes
from lmms_eval_unify.output.record import SCHEMA, UnifiedOutput, clean_text
from lmms_eval_unify.run import status as run_status
from lmms_eval_unify.run.context import trust_media_root
from lmms_eval_unify.run.saved import saved_media_roots, saved_responses

__all__ = [
    "Backend",
    "WorkerError",
    "environment_python",
    "missing_environment",
    "missing_in_environment",
    "missing_weight_file",
    "start_backend",
    "ALL_PRIMITIVES",
    "DECODE_ERRORS",
    "GENERATE_IMAGE",
    "GENERATE_VIDEO",
    "PARSE",
    "RETRYABLE_STATUS",
    "SCHEMA",
    "UNDERSTAND",
    "UNDERSTANDING_ONLY",
    "UNDERSTAND_AND_GENERATE",
    "UNDERSTAND_VIDEO",
    "DeadlineClient",
    "DeadlineExceeded",
    "EndpointError",
    "HttpEndpoint",
    "InstrumentPlan",
    "Missing",
    "ModelArgumentError",
    "ModelSettings",
    "Refused",
    "RequestInfo",
    "RetryPolicy",
    "ServerFacts",
    "UnifiedModel",
    "UnifiedOutput",
    "check_image_bytes",
    "clean_text",
    "decoding_options",
    "load_answer_space",
    "missing_code",
    "missing_device",
    "missing_env",
    "missing_weights",
    "model_missing",
    "parse_json",
    "parse_retry_after",
    "probe_server",
    "read_body",
    "read_bytes",
    "redact",
    "redirect_error",
    "reply_content",
    "resolve_device",
    "resolve_dtype",
    "run_only",
    "run_status",
    "saved_media_roots",
    "saved_responses",
    "seeded",
    "trust_media_root",
    "generation_arguments",
]
