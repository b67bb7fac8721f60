"""A composed unified model (an "agentic" pairing of two models): any lmms-eval model understands, one of ours draws.

``--model composed --model_args und=qwen2_5_vl,und_args="pretrained=Qwen/Qwen2.5-VL-7B-Instruct",
gen=qwen_image_edit,gen_args="pretrained=Qwen/Qwen-Image-Edit"`` is the paper's "Qwen2.5-7b + Qwen-edit"
row. ``und`` is any model name lmms-eval resolves (its built-ins, or ours), loaded as a *simple* model and
asked through its own ``generate_until``; ``gen`` is any registered image-generating :class:`UnifiedModel`
(ours or an out-of-tree plugin's).
Nested arguments are written in quotes or braces so lmms-eval's comma split leaves them whole:
``und_args="k=v,k2=v2"``, ``und_args='{"k": "v"}'`` or, without quotes, ``und_args=k=v;k2=v2``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_eval_unify.adapter import (
    GENERATE_IMAGE,
    PARSE,
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    model_missing,
)

REQUEST_TASK, REQUEST_SPLIT = "lmms_eval_unify_composed", "test"


def parse_nested_args(value: Any) -> dict[str, Any]:
    """``und_args``/``gen_args`` as keyword arguments (quoted ``k=v,…``, JSON object, or ``k=v;…``)."""
    from lmms_eval.utils import simple_parse_args_string

    if isinstance(value, dict):
        return dict(value)
    text = str(value or "").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if text.startswith("{"):
        return json.loads(text)
    return simple_parse_args_string(text.replace(";", ","))


def generator_class(name: str) -> type[UnifiedModel]:
    """An image-generating adapter class by its ``--model`` name: any :class:`UnifiedModel` lmms-eval has
    registered (ours or an out-of-tree plugin's), except ``composed`` itself; ``ValueError`` otherwise."""
    from lmms_eval.models import get_model

    try:
        cls = get_model(name, force_simple=True)
    except Exception as exc:  # unknown names and failing imports alike
        raise ValueError(f"gen={name!r} is not a registered model: {exc}") from exc
    if not isinstance(cls, type) or not issubclass(cls, UnifiedModel) or issubclass(cls, Composed):
        raise ValueError(f"gen={name!r} is not a unified-model adapter (a UnifiedModel other than composed)")
    if GENERATE_IMAGE not in cls.capabilities:
        raise ValueError(f"gen={name!r} cannot generate images (capabilities: {sorted(cls.capabilities)})")
    return cls


def load_generator(name: str, args: dict[str, Any], output_dir: str | None) -> UnifiedModel:
    """The image-generating adapter ``name`` (:func:`generator_class`) built with ``args``."""
    return generator_class(name)(output_dir=output_dir, **args)


def nested_args() -> Any:
    """A settings field holding another model's arguments (parsed by :func:`parse_nested_args`)."""
    return field(default_factory=dict, metadata={PARSE: parse_nested_args})


@dataclass(frozen=True, kw_only=True)
class ComposedSettings(ModelSettings):
    und: str
    """The understanding model: any model name lmms-eval resolves."""
    gen: str
    """The drawing model: a registered image-generating adapter."""
    und_args: dict[str, Any] = nested_args()
    """The understanding model's arguments."""
    gen_args: dict[str, Any] = nested_args()
    """The drawing model's arguments."""
    max_new_tokens: int | None = None
    """Caps every task's ``max_new_tokens`` (``None``: the task's value)."""


class Composed(UnifiedModel):
    """Understanding by an lmms-eval model, image generation/editing by one of our adapters."""

    model_id = "composed"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = ComposedSettings
    settings: ComposedSettings

    @classmethod
    def missing(cls, settings: ComposedSettings) -> list[Missing]:
        """The drawing adapter's own check (with ``gen_args``); the understanding model only as far as lmms-eval
        can load its class (what it loads when built is its own business)."""
        from lmms_eval.models import get_model

        found: list[Missing] = []
        try:
            found += model_missing(generator_class(settings.gen), dict(settings.gen_args))
        except ValueError as exc:
            found.append(Missing("code", f"composed: {exc}", "pass gen=<an image-generating adapter>, see --model"))
        try:
            get_model(settings.und, force_simple=True)
        except Exception as exc:  # noqa: BLE001 - unknown names and failing imports alike
            what = f"composed: und={settings.und!r} cannot be loaded ({type(exc).__name__}: {exc})"
            found.append(Missing("code", what, "pass und=<a model lmms-eval resolves> and install what it imports"))
        return found

    def __init__(self, **model_args: Any) -> None:
        from lmms_eval.models import get_model

        super().__init__(**model_args)
        settings = self.settings
        self.gen_model = load_generator(settings.gen, settings.gen_args, settings.output_dir)
        # lmms-eval gives every model batch_size
        und_kwargs = {"batch_size": self.batch_size, **settings.und_args}
        self.und_model = get_model(settings.und, force_simple=True)(**und_kwargs)

    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        """The understanding model's own ``generate_until`` over synthetic requests (one doc per prompt)."""
        gen_kwargs = {k: v for k, v in decoding.items() if k not in ("seed", "phase")}
        gen_kwargs.setdefault("until", [])
        if self.settings.max_new_tokens:
            gen_kwargs["max_new_tokens"] = min(int(gen_kwargs.get("max_new_tokens", 512)), self.settings.max_new_tokens)
        docs = {index: images for index, (images, _) in enumerate(batch)}
        self.und_model.task_dict = {REQUEST_TASK: {REQUEST_SPLIT: docs}}
        requests = [
            Instance(
                request_type="generate_until",
                arguments=(prompt, dict(gen_kwargs), _doc_images, index, REQUEST_TASK, REQUEST_SPLIT),
                idx=0,
                metadata={"task": REQUEST_TASK, "doc_id": index, "repeats": 1},
            )
            for index, (_, prompt) in enumerate(batch)
        ]
        return [_text(answer) for answer in self.und_model.generate_until(requests)]

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        return self.understand_batch([(images, prompt)], **decoding)[0]

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.gen_model.generate_image(prompt, images, **decoding)


def _doc_images(doc: list[Image.Image]) -> list[Image.Image]:
    return list(doc)


def _text(answer: Any) -> str:
    """lmms-eval models answer with a string or a ``GenerationResult``-like object carrying ``text``."""
    return answer if isinstance(answer, str) else str(getattr(answer, "text", answer))
