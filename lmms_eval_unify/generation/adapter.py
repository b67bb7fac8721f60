"""The one import path for model adapters: everything an adapter takes from the core.

Adapters (``model_adapters/`` here, or a package of your own) import core names from this module only, so
the modules behind it can move without breaking them (docs/adding_a_model.md):

* the base class and its settings: :class:`UnifiedModel`, :class:`ModelSettings`, :func:`run_only`,
  ``PARSE`` (a field's own ``--model_args`` parser), :class:`ModelArgumentError`;
* the capability vocabulary: the primitive names and the sets adapters declare as ``capabilities``;
* torch helpers: :func:`seeded`, :func:`decoding_options`, :func:`resolve_device`, :func:`resolve_dtype`;
* for the baseline instruments, the task's answer space: :class:`InstrumentPlan`, :func:`load_answer_space`;
* for replaying saved runs, the output contract and the run's bookkeeping: :class:`UnifiedOutput`,
  ``SCHEMA``, :func:`clean_text`, :func:`saved_responses`, :func:`trust_media_root`, ``run_status``.
"""

from lmms_eval_unify.generation.answer_spaces import InstrumentPlan, load_answer_space
from lmms_eval_unify.generation.devices import decoding_options, resolve_device, resolve_dtype, seeded
from lmms_eval_unify.generation.model import UnifiedModel
from lmms_eval_unify.generation.primitives import (
    ALL_PRIMITIVES,
    GENERATE_IMAGE,
    GENERATE_VIDEO,
    UNDERSTAND,
    UNDERSTAND_AND_GENERATE,
    UNDERSTAND_VIDEO,
    UNDERSTANDING_ONLY,
)
from lmms_eval_unify.generation.settings import PARSE, ModelArgumentError, ModelSettings, run_only
from lmms_eval_unify.integration import run_status
from lmms_eval_unify.integration.rescore import saved_responses
from lmms_eval_unify.integration.run_context import trust_media_root
from lmms_eval_unify.output.record import SCHEMA, UnifiedOutput, clean_text

__all__ = [
    "ALL_PRIMITIVES",
    "GENERATE_IMAGE",
    "GENERATE_VIDEO",
    "PARSE",
    "SCHEMA",
    "UNDERSTAND",
    "UNDERSTANDING_ONLY",
    "UNDERSTAND_AND_GENERATE",
    "UNDERSTAND_VIDEO",
    "InstrumentPlan",
    "ModelArgumentError",
    "ModelSettings",
    "UnifiedModel",
    "UnifiedOutput",
    "clean_text",
    "decoding_options",
    "load_answer_space",
    "resolve_device",
    "resolve_dtype",
    "run_only",
    "run_status",
    "saved_responses",
    "seeded",
    "trust_media_root",
]
