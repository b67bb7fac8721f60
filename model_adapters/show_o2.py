"""Show-o2 (showlab/Show-o, folder ``show-o2``) through its official model code, in its own environment.

The official code pins transformers 4.47 / diffusers 0.31 / huggingface-hub < 1, which this plugin cannot
import beside, so it runs in the environment ``lmms-eval-unify env create show_o2`` makes, driven through a
worker; ``model_adapters/official/show_o2_backend.py`` holds the steps of ``inference_mmu.py`` (understanding)
and ``inference_t2i.py`` (text-to-image) and this class the primitives. The official scripts are driven by an
OmegaConf YAML (``configs/showo2_*.yaml``); the backend loads the same file (``config`` model argument) and
points it at the user's weights. Defaults are the official ones: 432 px, 50 steps, guidance 5.0 (the YAML's
value; the README's demo uses 7.5). Show-o2 has no official image editing, so only text-to-image is offered;
input images of a generation request are not given to the generator (logged once). Understanding takes one
image (``max_input_images = 1``), as the official script.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from lmms_eval_unify.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_device,
    missing_weight_file,
    missing_weights,
    run_only,
)

from .hf_common import TEXT_ONLY_GENERATION_NOTE, OnceLogger
from .official.show_o2_backend import CHECKED_COMMIT
from .official_code import MissingOfficialCode, OfficialCode, RunsOfficialCode

OFFICIAL = OfficialCode(
    model_id="show_o2",
    env_var="SHOW_O2_REPO",
    url="https://github.com/showlab/Show-o (folder show-o2)",
    probe="models/__init__.py",
    backend="lmms_eval_unify.model_adapters.official.show_o2_backend:ShowO2Backend",
    checked_commit=CHECKED_COMMIT,
)
DEFAULT_CONFIG = "configs/showo2_1.5b_demo_432x432.yaml"


VAE_FILE = "the Wan2.1 VAE file (Wan2.1_VAE.pth from Wan-AI/Wan2.1-T2V-14B)"


@dataclass(frozen=True, kw_only=True)
class ShowO2Settings(ModelSettings):
    pretrained: str = "showlab/show-o2-1.5B"
    vae_path: str | None = None
    """The Wan2.1 VAE file (``Wan2.1_VAE.pth``); required."""
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$SHOW_O2_REPO``)."""
    env: str | None = run_only()
    """The model's environment (``lmms-eval-unify env create show_o2``; else ``$LMMS_EVAL_UNIFY_MODEL_ENVS/show_o2``;
    ``current``: this process)."""
    config: str = DEFAULT_CONFIG
    """The official YAML config, relative to the checkout."""
    guidance_scale: float = 5.0
    num_inference_steps: int = 50
    max_new_tokens: int = 300


class ShowO2(RunsOfficialCode, UnifiedModel):
    """Show-o2 1.5B/7B: single-image understanding and text-to-image."""

    model_id = "show_o2"
    capabilities = UNDERSTAND_AND_GENERATE
    max_input_images = 1
    settings_class = ShowO2Settings
    official = OFFICIAL
    settings: ShowO2Settings

    @classmethod
    def missing(cls, settings: ShowO2Settings) -> list[Missing]:
        probe = {"config": settings.config}
        return [
            *OFFICIAL.missing(settings, probe),
            *missing_weight_file(cls.model_id, settings.vae_path, "vae_path", VAE_FILE),
            *missing_weights(cls.model_id, settings.pretrained, files=("config.json",)),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self._notes = OnceLogger()
        self.backend = self._load_backend()

    def _load_backend(self) -> Any:
        vae = missing_weight_file(self.model_id, self.settings.vae_path, "vae_path", VAE_FILE)
        if vae:
            raise MissingOfficialCode(f"{vae[0].what}: {vae[0].fix}")
        configuration = {
            "config": self.settings.config,
            "pretrained": self.settings.pretrained,
            "vae_path": str(Path(str(self.settings.vae_path)).resolve()),
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
        }
        return OFFICIAL.start(self.settings, configuration)

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        if not images:
            raise ValueError("show_o2 understanding needs an image (the official route embeds exactly one)")
        max_new = min(int(decoding.get("max_new_tokens", self.settings.max_new_tokens)), self.settings.max_new_tokens)
        # The official route VAE-encodes the image by sampling (torch's global generator): seeded per sample.
        seed = int(decoding.get("seed", self.seed))
        answer = self.backend.call("understand", images[0].convert("RGB"), prompt, max_new, seed=seed)
        return str(answer["text"]).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.generate_image_batch([(prompt, images, decoding)])[0]

    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """One sampler run for the whole batch, each item from its own seed (text only: input images are
        not given to the generator)."""
        for _, images, _ in batch:
            if images:
                self._notes.warn(TEXT_ONLY_GENERATION_NOTE.format(model=self.model_id, n=len(images)))
        seeds = [int(decoding["seed"]) for _, _, decoding in batch]
        pictures = self.backend.call(  # seed=: any draw the official code makes beyond the noise is repeatable
            "generate",
            [prompt for prompt, _, _ in batch],
            seeds,
            self.settings.guidance_scale,
            self.settings.num_inference_steps,
            seed=seeds[0],
        )
        return [picture.convert("RGB") for picture in pictures]
