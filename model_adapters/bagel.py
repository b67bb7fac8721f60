"""BAGEL (ByteDance-Seed) through the official ``InterleaveInferencer`` (GPU only: flash-attn, CUDA autocast), run
in the model's own environment (``lmms-eval-unify env create bagel``: transformers 4.49) through a worker;
``model_adapters/official/bagel_backend.py`` loads the model there.

Understanding, text-to-image and editing go through ``interleave_inference`` with the official demo's
settings (``app.py``): understanding greedy with ``max_think_token_n`` tokens; text-to-image
``cfg_text_scale=4``, ``cfg_interval=[0.4, 1]``, ``cfg_renorm_type="global"``, 1024 px; editing
additionally ``cfg_img_scale=2``, ``cfg_interval=[0, 1]``, ``cfg_renorm_type="text_channel"``, output shape
from the (last) input image; 50 timesteps with shift 3 in both. Every input image is given, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_eval_unify.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_device,
    missing_weights,
    run_only,
)

from .official.bagel_backend import CHECKED_COMMIT, WEIGHT_FILES
from .official_code import OfficialCode, RunsOfficialCode, weights_folder

OFFICIAL = OfficialCode(
    model_id="bagel",
    env_var="BAGEL_REPO",
    url="https://github.com/ByteDance-Seed/Bagel",
    probe="inferencer.py",
    backend="lmms_eval_unify.model_adapters.official.bagel_backend:BagelBackend",
    checked_commit=CHECKED_COMMIT,
)
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class BagelSettings(ModelSettings):
    pretrained: str = "ByteDance-Seed/BAGEL-7B-MoT"
    """Local folder of the weights (or a Hub id already in the cache)."""
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$BAGEL_REPO``)."""
    env: str | None = run_only()
    """The model's environment (``lmms-eval-unify env create bagel``; ``current``: this process)."""
    cfg_text_scale: float = 4.0
    cfg_img_scale: float = 2.0
    num_timesteps: int = 50
    timestep_shift: float = 3.0
    image_size: int = 1024
    think: bool = False
    """The official "thinking" mode (a reasoning block before the answer or the image)."""
    max_new_tokens: int | None = None
    """Caps every task's ``max_new_tokens`` (``None``: the task's value)."""


class Bagel(RunsOfficialCode, UnifiedModel):
    """BAGEL-7B-MoT: understanding, text-to-image and editing, natively interleaved."""

    model_id = "bagel"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = BagelSettings
    official = OFFICIAL
    settings: BagelSettings

    @classmethod
    def missing(cls, settings: BagelSettings) -> list[Missing]:
        return [
            *OFFICIAL.missing(settings, {}),
            *missing_weights(cls.model_id, settings.pretrained, files=WEIGHT_FILES),
            *missing_device(cls.model_id, settings.device, needs_cuda=True),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.backend = self._load_backend()

    def _load_backend(self) -> Any:
        weights = weights_folder(self.model_id, self.settings.pretrained, WEIGHT_FILES)
        configuration = {"weights": str(weights)}
        return OFFICIAL.start(self.settings, configuration)

    def generation_settings(self, editing: bool) -> dict[str, Any]:
        """The official demo's diffusion settings for text-to-image or editing."""
        settings = {
            "cfg_text_scale": self.settings.cfg_text_scale,
            "num_timesteps": self.settings.num_timesteps,
            "timestep_shift": self.settings.timestep_shift,
            "cfg_renorm_min": 0.0,
        }
        if editing:
            return {
                **settings,
                "cfg_img_scale": self.settings.cfg_img_scale,
                "cfg_interval": [0.0, 1.0],
                "cfg_renorm_type": "text_channel",
            }
        return {
            **settings,
            "cfg_interval": [0.4, 1.0],
            "cfg_renorm_type": "global",
            "image_shapes": (self.settings.image_size, self.settings.image_size),
        }

    def text_settings(self, decoding: dict[str, Any]) -> dict[str, Any]:
        temperature = float(decoding.get("temperature", 0) or 0)
        max_new = int(decoding.get("max_new_tokens", 512))
        return {
            "do_sample": temperature > 0,
            "text_temperature": temperature or 0.3,
            "max_think_token_n": min(max_new, self.settings.max_new_tokens)
            if self.settings.max_new_tokens
            else max_new,
        }

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        outputs = self.backend.call(
            "interleave_inference",
            [*(im.convert("RGB") for im in images), prompt],
            seed=int(decoding.get("seed", self.seed)),
            think=self.settings.think,
            understanding_output=True,
            **self.text_settings(decoding),
        )
        texts = [item for item in outputs if isinstance(item, str)]
        if not texts:
            raise ValueError("bagel returned no text")
        return THINK_BLOCK.sub("", texts[-1]).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        outputs = self.backend.call(
            "interleave_inference",
            [*(im.convert("RGB") for im in images), prompt],
            seed=int(decoding["seed"]),
            think=self.settings.think,
            understanding_output=False,
            **self.generation_settings(editing=bool(images)),
        )
        drawn = [item for item in outputs if isinstance(item, Image.Image)]
        if not drawn:
            raise ValueError("bagel returned no image")
        return drawn[-1].convert("RGB")
