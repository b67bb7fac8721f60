"""Show-o2 (showlab/Show-o, folder ``show-o2``) through its official model code (GPU; own environment).

The official scripts are driven by an OmegaConf YAML (``configs/showo2_*.yaml``); the adapter loads the same
file (``config`` model argument), points it at the user's weights, and runs the steps of
``inference_mmu.py`` (understanding: Wan2.1-VAE latents → dual understanding/generation embedders → fusion,
greedy ``mmu_generate``) and ``inference_t2i.py`` (text-to-image: flow-matching ODE sampler over
``t2i_generate`` with classifier-free guidance, Wan2.1-VAE decode). Defaults are the official ones: 432 px,
50 steps, guidance 5.0 (the YAML's value; the README's demo uses 7.5). Show-o2 has no official image
editing, so only text-to-image is offered; input images of a generation request are not given to the
generator (logged once). Understanding takes one image (``max_input_images = 1``), as the official script.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from lmms_eval_unify.model_adapters.hf_common import TEXT_ONLY_GENERATION_NOTE, OnceLogger
from lmms_eval_unify.model_adapters.official_code import (
    MissingOfficialCode,
    import_official,
    missing_checkout,
    official_checkout,
)
from PIL import Image

from lmms_eval_unify.generation.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    missing_code,
    missing_device,
    missing_weights,
    run_only,
    seeded,
)

REPO_URL = "https://github.com/showlab/Show-o (folder show-o2)"
REPO_ENV, REPO_PROBE = "SHOW_O2_REPO", "models/__init__.py"
DEFAULT_CONFIG = "configs/showo2_1.5b_demo_432x432.yaml"


class ShowO2Backend:
    """The official Show-o2 modules, loaded once, and the two inference routines of its scripts."""

    def __init__(
        self,
        repo: Path,
        config_path: str,
        pretrained: str,
        vae_path: str,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        from omegaconf import OmegaConf

        models = import_official("show_o2", "models", repo)
        misc = import_official("show_o2", "models.misc", repo)
        self.utils = import_official("show_o2", "utils", repo)
        self.transport = import_official("show_o2", "transport", repo)
        self.data_utils = import_official("show_o2", "datasets.utils", repo)
        config = OmegaConf.load(repo / config_path if not Path(config_path).is_absolute() else config_path)
        config.model.showo.pretrained_model_path = pretrained
        config.model.vae_model.pretrained_model_path = vae_path
        self.config, self.device, self.dtype, self.models = config, device, dtype, models
        self.vae = models.WanVAE(vae_pth=vae_path, dtype=dtype, device=device)
        self.tokenizer, self.token_ids = misc.get_text_tokenizer(
            config.model.showo.llm_model_path,
            add_showo_tokens=True,
            return_showo_token_ids=True,
            llm_name=self.utils.path_to_llm_name[config.model.showo.llm_model_path],
        )
        config.model.showo.llm_vocab_size = len(self.tokenizer)
        self.model = models.Showo2Qwen2_5.from_pretrained(pretrained, use_safetensors=False).to(device)
        self.model.to(dtype).eval()
        if config.model.showo.add_time_embeds:  # the time embedding is prepended to the vision tokens
            config.dataset.preprocessing.num_image_tokens += 1
            config.dataset.preprocessing.num_video_tokens += 1
        self.hyper = self.utils.get_hyper_params(config, self.tokenizer, self.token_ids)
        self.prepare_gen_input = misc.prepare_gen_input

    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.no_grad()
    def understand(self, image: Image.Image, question: str, max_new_tokens: int) -> str:
        model, ids, device = self.model, self.token_ids, self.device
        pixels = self.data_utils.image_transform(image, resolution=self.config.dataset.preprocessing.resolution)
        pixels = pixels.to(device).unsqueeze(0)
        latents = self.vae.sample(pixels.unsqueeze(2)).squeeze(2).to(self.dtype)
        und = model.image_embedder_und(latents) + model.position_embedding(model.image_position_ids)
        und = model.und_trans(und)["last_hidden_state"]
        image_embeds = model.fusion_proj(torch.cat([und, model.image_embedder_gen(latents)], dim=-1))
        head = [ids["bos_id"], *self._tokens("system\nYou are a helpful assistant.<|im_end|>")]
        head += self._tokens("\n<|im_start|>user\n")
        tail = [
            ids["boi_id"],
            ids["eoi_id"],
            *self._tokens(question),
            *self._tokens("\n<|im_start|>assistant\n"),
        ]
        embed = model.showo.model.embed_tokens
        head_embeds = embed(torch.tensor([head], device=device))
        tail_embeds = embed(torch.tensor([tail], device=device))
        visual = [image_embeds]
        if self.config.model.showo.add_time_embeds:
            time_embeds = model.time_embed(torch.Tensor([[1.0]]).to(device), head_embeds.dtype)
            if hasattr(model, "time_embed_proj"):
                time_embeds = model.time_embed_proj(time_embeds)
            visual.insert(0, time_embeds)
        embeds = torch.cat([head_embeds, tail_embeds[:, :1], *visual, tail_embeds[:, 1:]], dim=1).to(self.dtype)
        positions = torch.tensor([[[len(head) + 1, self.config.dataset.preprocessing.num_image_tokens]]], device=device)
        if self.config.model.showo.add_time_embeds:
            positions[..., 0] += 1
        mask = self.models.omni_attn_mask_naive(
            B=1, LEN=embeds.size(1), modalities=positions, device=device, inverted=True
        ).to(embeds.dtype)
        tokens = model.mmu_generate(
            input_embeds=embeds,
            attention_mask=mask,
            top_k=1,
            max_new_tokens=max_new_tokens,
            eos_token=self.tokenizer.eos_token_id,
        )
        return self.tokenizer.batch_decode(torch.stack(tokens).squeeze()[None], skip_special_tokens=True)[0]

    @torch.no_grad()
    def generate(
        self, prompts: list[str], seeds: list[int], guidance_scale: float, num_steps: int
    ) -> list[Image.Image]:
        """Text-to-image for several prompts in one sampler run, batched as ``inference_t2i.py`` batches them
        (conditional rows, then unconditional rows), except that each item's initial noise comes from its
        own seed (the script draws one tensor for the whole batch): an item's image does not depend on the
        batch it is in, up to batched-kernel rounding (the Euler ODE sampler adds no noise)."""
        (
            num_image_tokens,
            _,
            max_seq_len,
            max_text_len,
            latent_dim,
            patch_size,
            latent_width,
            latent_height,
            pad_id,
            bos_id,
            eos_id,
            boi_id,
            eoi_id,
            _,
            _,
            img_pad_id,
            _,
            _,
        ) = self.hyper
        device, transport_config = self.device, self.config.transport
        text, text_null, positions, positions_null = self.prepare_gen_input(
            prompts,
            self.tokenizer,
            num_image_tokens,
            bos_id,
            eos_id,
            boi_id,
            eoi_id,
            pad_id,
            img_pad_id,
            max_text_len,
            device,
        )
        shape = (1, latent_dim, latent_height * patch_size, latent_width * patch_size)
        z = torch.cat([torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for seed in seeds])
        z = z.to(torch.bfloat16).to(device)
        if guidance_scale > 0:
            z = torch.cat([z, z])
            text, positions = torch.cat([text, text_null]), torch.cat([positions, positions_null])
        mask = self.models.omni_attn_mask_naive(text.size(0), max_seq_len, positions, device).to(self.dtype)
        transport = self.transport.create_transport(
            path_type=transport_config.path_type,
            prediction=transport_config.prediction,
            loss_weight=transport_config.loss_weight,
            train_eps=transport_config.train_eps,
            sample_eps=transport_config.sample_eps,
            snr_type=transport_config.snr_type,
            do_shift=transport_config.do_shift,
            seq_len=num_image_tokens,
        )
        sample = self.transport.Sampler(transport).sample_ode(
            sampling_method=transport_config.sampling_method,
            num_steps=num_steps,
            atol=transport_config.atol,
            rtol=transport_config.rtol,
            reverse=transport_config.reverse,
            time_shifting_factor=transport_config.time_shifting_factor,
        )
        latents = sample(
            z,
            self.model.t2i_generate,
            text_tokens=text,
            attention_mask=mask,
            modality_positions=positions,
            output_hidden_states=True,
            max_seq_len=max_seq_len,
            guidance_scale=guidance_scale,
        )[-1]
        latents = torch.chunk(latents, 2)[0] if guidance_scale > 0 else latents
        images = self.vae.batch_decode(latents.unsqueeze(2)).squeeze(2)
        return [Image.fromarray(array) for array in self.utils.denorm(images)]


def missing_vae(settings: ShowO2Settings) -> list[Missing]:
    """The Wan2.1 VAE file the ``vae_path`` model argument names is missing."""
    if settings.vae_path and Path(settings.vae_path).is_file():
        return []
    what = (
        "show_o2 needs the Wan2.1 VAE file (Wan2.1_VAE.pth from Wan-AI/Wan2.1-T2V-14B), "
        f"and vae_path={settings.vae_path!r} is no file"
    )
    return [Missing("weights", what, "download it and pass --model_args vae_path=<file>")]


@dataclass(frozen=True, kw_only=True)
class ShowO2Settings(ModelSettings):
    pretrained: str = "showlab/show-o2-1.5B"
    vae_path: str | None = None
    """The Wan2.1 VAE file (``Wan2.1_VAE.pth``); required."""
    repo_path: str | None = run_only()
    """Checkout of the official code (else ``$SHOW_O2_REPO``)."""
    config: str = DEFAULT_CONFIG
    """The official YAML config, relative to the checkout."""
    guidance_scale: float = 5.0
    num_inference_steps: int = 50
    max_new_tokens: int = 300


class ShowO2(UnifiedModel):
    """Show-o2 1.5B/7B: single-image understanding and text-to-image."""

    model_id = "show_o2"
    capabilities = UNDERSTAND_AND_GENERATE
    max_input_images = 1
    settings_class = ShowO2Settings
    settings: ShowO2Settings

    @classmethod
    def missing(cls, settings: ShowO2Settings) -> list[Missing]:
        return [
            *missing_checkout(cls.model_id, settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE),
            *missing_code(cls.model_id, "omegaconf"),
            *missing_vae(settings),
            *missing_weights(cls.model_id, settings.pretrained),
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self._notes = OnceLogger()
        self.backend = self._load_backend()

    def _load_backend(self) -> Any:
        repo = official_checkout(self.model_id, self.settings.repo_path, REPO_ENV, REPO_URL, REPO_PROBE)
        vae = missing_vae(self.settings)
        if vae:
            raise MissingOfficialCode(f"{vae[0].what}: {vae[0].fix}")
        return ShowO2Backend(
            repo,
            self.settings.config,
            self.settings.pretrained,
            self.settings.vae_path,
            self.device,
            self.dtype,
        )

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        if not images:
            raise ValueError("show_o2 understanding needs an image (the official route embeds exactly one)")
        max_new = min(int(decoding.get("max_new_tokens", self.settings.max_new_tokens)), self.settings.max_new_tokens)
        # The official route VAE-encodes the image by sampling (torch's global generator): seed it per sample.
        with seeded(int(decoding.get("seed", self.seed)), self.device):
            return self.backend.understand(images[0].convert("RGB"), prompt, max_new).strip()

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.generate_image_batch([(prompt, images, decoding)])[0]

    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """One sampler run for the whole batch, each item from its own seed (text only: input images are
        not given to the generator)."""
        for _, images, _ in batch:
            if images:
                self._notes.warn(TEXT_ONLY_GENERATION_NOTE.format(model=self.model_id, n=len(images)))
        seeds = [int(decoding["seed"]) for _, _, decoding in batch]
        with seeded(seeds[0], self.device):  # any draw the official code makes beyond the noise is repeatable
            pictures = self.backend.generate(
                [prompt for prompt, _, _ in batch],
                seeds,
                self.settings.guidance_scale,
                self.settings.num_inference_steps,
            )
        return [picture.convert("RGB") for picture in pictures]
