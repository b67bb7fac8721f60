"""OmniGen2's official pipelines (VectorSpaceLab/OmniGen2), run in the model's environment.

This module runs inside the worker (:mod:`lmms_eval_unify.generation.worker_main`), with the checkout first on
``sys.path``. Generation and editing call ``OmniGen2Pipeline`` and understanding ``OmniGen2ChatPipeline`` built
from the same components, as the official ``inference.py`` and ``inference_chat.py`` do; raw pipeline outputs
are returned (the official ``inference.py`` saves a lossy file).
"""

from __future__ import annotations

import importlib
from typing import Any

from lmms_eval_unify.generation.worker_main import import_problems

CHECKED_COMMIT: str | None = "0f72fa92564d9f8ba76f53fcc3c05aca2372458f"
"""The OmniGen2 commit this backend was checked against (bench/parity/omnigen2.py, tiny weights on CPU: t2i, edit and
chat identical to the official ``inference.py`` / ``inference_chat.py``)."""
GENERATION = "omnigen2.pipelines.omnigen2.pipeline_omnigen2"
CHAT = "omnigen2.pipelines.omnigen2.pipeline_omnigen2_chat"
TRANSFORMER = "omnigen2.models.transformers.transformer_omnigen2"


def import_model_code(module: str) -> Any:
    """An official module, with triton's CUDA probe switched off on a machine without a GPU: importing the model
    code with the CUDA build of torch otherwise calls ``torch.cuda`` through triton and fails there."""
    import torch

    if not torch.cuda.is_available():
        import_utils: Any = importlib.import_module("omnigen2.utils.import_utils")  # the official code: no types
        import_utils._triton_available = False
    return importlib.import_module(module)


def probe(configuration: dict[str, Any]) -> list[dict[str, str]]:
    """What the worker lacks: the official pipelines and model code do not import."""
    return import_problems("omnigen2", (GENERATION, CHAT, TRANSFORMER), import_model_code)


class OmniGen2Backend:
    """The official generation and chat pipelines, loaded once."""

    def __init__(self, pretrained: str, device: str, dtype: str) -> None:
        import torch

        generation, chat = import_model_code(GENERATION), import_model_code(CHAT)
        transformer = import_model_code(TRANSFORMER)
        self.torch, self.device = torch, torch.device(device)
        pipeline = generation.OmniGen2Pipeline.from_pretrained(
            pretrained, torch_dtype=getattr(torch, dtype), trust_remote_code=True
        )
        pipeline.transformer = transformer.OmniGen2Transformer2DModel.from_pretrained(
            pretrained, subfolder="transformer", torch_dtype=getattr(torch, dtype)
        )
        self.pipeline = pipeline.to(self.device)
        self.pipeline.set_progress_bar_config(disable=True)
        self.chat_pipeline = chat.OmniGen2ChatPipeline(**self.pipeline.components)

    def _run(self, pipeline: Any, generator_seed: int, **settings: Any) -> Any:
        generator = self.torch.Generator(device=self.device).manual_seed(generator_seed)
        return pipeline(generator=generator, output_type="pil", num_images_per_prompt=1, **settings)

    def generate(self, generator_seed: int, **settings: Any) -> list[Any]:
        """``OmniGen2Pipeline(**settings)``: its images."""
        return list(self._run(self.pipeline, generator_seed, **settings).images)

    def chat(self, generator_seed: int, **settings: Any) -> str:
        """``OmniGen2ChatPipeline(**settings)``: its text."""
        return str(self._run(self.chat_pipeline, generator_seed, **settings).text or "")
