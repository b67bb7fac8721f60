"""OmniGen2 (VectorSpaceLab) through its official pipelines (no diffusers pipeline exists for it), run in the
model's own environment (``lmms-eval-unify env create omnigen2``: transformers 4.51.3, diffusers 0.34) through a
worker; ``model_adapters/official/omnigen2_backend.py`` builds the pipelines there.

Generation and editing use ``OmniGen2Pipeline`` with the defaults of the official ``inference.py``:
1024x1024, 50 steps, text guidance 5.0, image guidance 2.0 (editing; ignored without input images), CFG
over the whole schedule, the official negative prompt; every input image is passed (``input_images``).
Understanding uses ``OmniGen2ChatPipeline`` built from the same components and returns its text.
"""

from __future__ import annotations

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

from .official.omnigen2_backend import CHECKED_COMMIT
from .official_code import OfficialCode, RunsOfficialCode

OFFICIAL = OfficialCode(
    model_id="omnigen2",
    env_var="OMNIGEN2_REPO",
    url="https://github.com/VectorSpaceLab/OmniGen2",
    probe="omnigen2/pipelines/omnigen2/pipeline_omnigen2.py",
    backend="lmms_eval_unify.model_adapters.official.omnigen2_backend:OmniGen2Backend",
    checked_commit=CHECKED_COMMIT,
)
NEGATIVE_PROMPT = (
    "(((deformed))), blurry, over saturation, bad anatomy, disfigured, poorly drawn face, mutation, mutated, "
    "(extra_limb), (ugly), (poorly drawn hands), fused fingers, messy drawing, broken legs censor, censored, "
    "censor_bar"
)


@dataclass(frozen=True, kw_only=True)
class OmniGen2Settings(ModelSettings):
    pretrained: str = "OmniGen2/OmniGen2"
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$OMNIGEN2_REPO``)."""
    env: str | None = run_only()
    """The model's environment (``lmms-eval-unify env create omnigen2``; ``current``: this process)."""
    num_inference_steps: int = 50
    text_guidance_scale: float = 5.0
    image_guidance_scale: float = 2.0
    height: int = 1024
    width: int = 1024
    negative_prompt: str = NEGATIVE_PROMPT


class OmniGen2(RunsOfficialCode, UnifiedModel):
    """OmniGen2: text-to-image, multi-image editing and chat understanding."""

    model_id = "omnigen2"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = OmniGen2Settings
    official = OFFICIAL
    settings: OmniGen2Settings

    @classmethod
    def missing(cls, settings: OmniGen2Settings) -> list[Missing]:
        return [
            *OFFICIAL.missing(settings, {}),
            *missing_weights(cls.model_id, settings.pretrained, files=("model_index.json",)),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.backend = self._load_backend()

    def _load_backend(self) -> Any:
        configuration = {
            "pretrained": self.settings.pretrained,
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
        }
        return OFFICIAL.start(self.settings, configuration)

    def _settings(self, prompt: str, images: list[Image.Image]) -> dict[str, Any]:
        """The official ``inference.py`` settings for one request."""
        return {
            "prompt": prompt,
            "input_images": [im.convert("RGB") for im in images] or None,
            "height": self.settings.height,
            "width": self.settings.width,
            "num_inference_steps": self.settings.num_inference_steps,
            "max_sequence_length": 1024,
            "text_guidance_scale": self.settings.text_guidance_scale,
            "image_guidance_scale": self.settings.image_guidance_scale,
            "cfg_range": (0.0, 1.0),
            "negative_prompt": self.settings.negative_prompt,
        }

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        seed = int(decoding.get("seed", self.seed))
        text = self.backend.call("chat", seed, seed=seed, **self._settings(prompt, images))
        if not text:
            raise ValueError("omnigen2 chat returned no text")
        return str(text).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        seed = int(decoding["seed"])
        # seed=: the pipeline VAE-encodes input images with torch's global generator
        images_out = self.backend.call("generate", seed, seed=seed, **self._settings(prompt, images))
        if not images_out:
            raise ValueError("omnigen2 returned no image")
        return images_out[0].convert("RGB")
