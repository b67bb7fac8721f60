"""Show-o2's official inference routines (showlab/Show-o, folder ``show-o2``), run in the model's environment.

This module runs inside the worker (:mod:`lmms_eval_unify.generation.worker_main`), with the checkout first on
``sys.path``; it imports torch, PIL and the official code only. It follows the two official scripts step by
step, at revision :data:`CHECKED_COMMIT` (and at 61a034f, the last revision before the configuration renamed
``num_image_tokens``): ``inference_mmu.py`` for understanding and ``inference_t2i.py`` for text-to-image.
The official safety checker (``inference_t2i.py``, CompVis/stable-diffusion-safety-checker, HEAD only) is not
run: it replaces flagged images, which an evaluation must score as the model drew them.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from lmms_eval_unify.generation.worker_main import import_problems

CHECKED_COMMIT = "45a5a2de01d1ebd10cd5864d29310a76476cdf23"
"""The Show-o commit this backend was checked against (HEAD on 2026-11-28; show-o2 last changed in b4c2a88)."""
HYPER_PARAMS = {
    19: (
        "num_t2i_image_tokens num_mmu_image_tokens num_video_tokens max_seq_len max_text_len image_latent_dim "
        "patch_size latent_width latent_height pad_id bos_id eos_id boi_id eoi_id bov_id eov_id img_pad_id "
        "vid_pad_id guidance_scale"
    ).split(),
    18: (
        "num_image_tokens num_video_tokens max_seq_len max_text_len image_latent_dim patch_size latent_width "
        "latent_height pad_id bos_id eos_id boi_id eoi_id bov_id eov_id img_pad_id vid_pad_id guidance_scale"
    ).split(),
}
"""``utils.get_hyper_params``'s return values by name: 19 since ce668f4 (2025-07-09), 18 before it."""
SYSTEM_PROMPT = "system\nYou are a helpful assistant.<|im_end|>"
USER_TURN, ASSISTANT_TURN = "\n<|im_start|>user\n", "\n<|im_start|>assistant\n"
"""The chat template of ``inference_mmu.py`` (its ``sys_prompt_ids``, ``role_a``, ``role_b``)."""
TOKEN_COUNT_KEYS = (("num_t2i_image_tokens", "num_mmu_image_tokens"), ("num_image_tokens", "num_image_tokens"))
"""The configuration's image-token counts (generation, understanding): since ce668f4, and before it."""


def token_count_keys(preprocessing: Any) -> tuple[str, str]:
    """The generation and understanding token-count keys this revision's configuration uses."""
    for keys in TOKEN_COUNT_KEYS:
        if keys[0] in preprocessing:
            return keys
    raise KeyError(f"the Show-o2 configuration has none of {[k[0] for k in TOKEN_COUNT_KEYS]} in dataset.preprocessing")


def hyper_params(values: tuple[Any, ...]) -> dict[str, Any]:
    """``get_hyper_params``'s tuple as a dict, for either layout; the token counts under the new names."""
    if len(values) not in HYPER_PARAMS:
        raise ValueError(f"utils.get_hyper_params returned {len(values)} values; this backend knows 18 and 19")
    named = dict(zip(HYPER_PARAMS[len(values)], values, strict=True))
    named.setdefault("num_t2i_image_tokens", named.get("num_image_tokens"))
    named.setdefault("num_mmu_image_tokens", named.get("num_image_tokens"))
    return named


def load_file_module(path: Path, name: str) -> ModuleType:
    """A module of the checkout loaded from its file under a private name. ``datasets/utils.py`` must not be
    imported as ``datasets.utils``: in a process that already imported Hugging Face's ``datasets`` that name is
    taken, and the package's ``__init__`` pulls in every training data loader."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checkout_root() -> Path:
    """The checkout the worker put first on ``sys.path`` (the folder holding ``models/``)."""
    spec = importlib.util.find_spec("models")
    if spec is None or spec.origin is None:
        raise ImportError("the Show-o2 checkout (its models/ package) is not on sys.path")
    return Path(spec.origin).resolve().parent.parent


def by_name_checkpoints(config: Any) -> list[str]:
    """The Hugging Face checkpoints the official configuration loads by name (LLM and SigLIP)."""
    showo = config.model.showo
    names = [showo.llm_model_path, showo.get("clip_pretrained_model_path")]
    clip = config.model.get("clip")
    if clip is not None:
        names.append(clip.get("pretrained_model_path"))
    return [str(name) for name in names if name]


def probe(configuration: dict[str, Any]) -> list[dict[str, str]]:
    """What the worker lacks: the official modules and their dependencies, the by-name checkpoints."""
    problems = import_problems("show_o2", ("omegaconf", "torchdiffeq", "models", "models.misc", "utils", "transport"))
    if problems:
        return problems
    from omegaconf import OmegaConf

    config = OmegaConf.load(checkout_root() / configuration["config"])
    for name in by_name_checkpoints(config):
        if not checkpoint_available(name):
            problems.append(
                {
                    "kind": "weights",
                    "what": f"the official config {configuration['config']} loads {name!r} by name, and it is "
                    "neither a local folder nor in the Hugging Face cache",
                    "fix": f"`hf download {name}` (into $HF_HOME), or edit the YAML to a local folder",
                }
            )
    return problems


def checkpoint_available(name: str) -> bool:
    """A local folder, or a Hugging Face repository whose ``config.json`` is in the cache."""
    if Path(name).expanduser().is_dir():
        return True
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(name, "config.json"), str)


class ShowO2Backend:
    """The official Show-o2 modules, loaded once, and the two routines of its inference scripts."""

    def __init__(self, config: str, pretrained: str, vae_path: str, device: str, dtype: str) -> None:
        import torch
        from omegaconf import OmegaConf

        root = checkout_root()
        self.torch, self.models = torch, importlib.import_module("models")
        misc, self.utils = importlib.import_module("models.misc"), importlib.import_module("utils")
        self.transport = importlib.import_module("transport")
        self.data_utils = load_file_module(root / "datasets" / "utils.py", "show_o2_datasets_utils")
        self.config = OmegaConf.load(config if Path(config).is_absolute() else root / config)
        self.config.model.showo.pretrained_model_path = pretrained
        self.config.model.vae_model.pretrained_model_path = vae_path
        self.device, self.dtype = torch.device(device), getattr(torch, dtype)
        self.vae = self.models.WanVAE(vae_pth=vae_path, dtype=self.dtype, device=self.device)
        llm = self.config.model.showo.llm_model_path
        self.tokenizer, self.token_ids = misc.get_text_tokenizer(
            llm, add_showo_tokens=True, return_showo_token_ids=True, llm_name=self.utils.path_to_llm_name[llm]
        )
        self.config.model.showo.llm_vocab_size = len(self.tokenizer)
        model = self.models.Showo2Qwen2_5.from_pretrained(pretrained, use_safetensors=False).to(self.device)
        self.model = model.to(self.dtype).eval()
        preprocessing = self.config.dataset.preprocessing
        if self.config.model.showo.add_time_embeds:  # the time embedding is prepended to the vision tokens
            for key in {*token_count_keys(preprocessing), "num_video_tokens"}:
                preprocessing[key] += 1
        self.hyper = hyper_params(self.utils.get_hyper_params(self.config, self.tokenizer, self.token_ids))
        self.prepare_gen_input = misc.prepare_gen_input

    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def understand(self, image: Any, question: str, max_new_tokens: int) -> dict[str, Any]:
        """``inference_mmu.py`` for one image and question: greedy token ids and their decoded text."""
        torch, model, ids, device = self.torch, self.model, self.token_ids, self.device
        with torch.no_grad():
            resolution = self.config.dataset.preprocessing.resolution
            pixels = self.data_utils.image_transform(image, resolution=resolution).to(device).unsqueeze(0)
            latents = self.vae.sample(pixels.unsqueeze(2)).squeeze(2).to(self.dtype)
            und = model.image_embedder_und(latents) + model.position_embedding(model.image_position_ids)
            und = model.und_trans(und)["last_hidden_state"]
            image_embeds = model.fusion_proj(torch.cat([und, model.image_embedder_gen(latents)], dim=-1))
            head = [ids["bos_id"], *self._tokens(SYSTEM_PROMPT), *self._tokens(USER_TURN)]
            tail = [ids["boi_id"], ids["eoi_id"], *self._tokens(question), *self._tokens(ASSISTANT_TURN)]
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
            offset = len(head) + 1 + (1 if self.config.model.showo.add_time_embeds else 0)
            positions = torch.tensor([[[offset, self.hyper["num_mmu_image_tokens"]]]], device=device)
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
            token_ids = torch.stack(tokens).squeeze()[None]
            text = self.tokenizer.batch_decode(token_ids, skip_special_tokens=True)[0]
        return {"token_ids": [int(t) for t in token_ids.flatten().tolist()], "text": text}

    def generate(self, prompts: list[str], seeds: list[int], guidance_scale: float, num_steps: int) -> list[Any]:
        """``inference_t2i.py`` for several prompts in one sampler run (conditional rows, then unconditional
        rows), except that each item's initial noise comes from its own seed (the script draws one tensor for
        the whole batch): an item's image does not depend on its batch, up to batched-kernel rounding."""
        from PIL import Image

        torch, hyper, device, transport_config = self.torch, self.hyper, self.device, self.config.transport
        num_tokens = hyper["num_t2i_image_tokens"]
        with torch.no_grad():
            text, text_null, positions, positions_null = self.prepare_gen_input(
                prompts,
                self.tokenizer,
                num_tokens,
                hyper["bos_id"],
                hyper["eos_id"],
                hyper["boi_id"],
                hyper["eoi_id"],
                hyper["pad_id"],
                hyper["img_pad_id"],
                hyper["max_text_len"],
                device,
            )
            size = (hyper["latent_height"] * hyper["patch_size"], hyper["latent_width"] * hyper["patch_size"])
            shape = (1, hyper["image_latent_dim"], *size)
            z = torch.cat([torch.randn(shape, generator=torch.Generator().manual_seed(seed)) for seed in seeds])
            z = z.to(torch.bfloat16).to(device)
            if guidance_scale > 0:
                z = torch.cat([z, z])
                text, positions = torch.cat([text, text_null]), torch.cat([positions, positions_null])
            max_seq_len = hyper["max_seq_len"]
            mask = self.models.omni_attn_mask_naive(text.size(0), max_seq_len, positions, device).to(self.dtype)
            transport = self.transport.create_transport(
                path_type=transport_config.path_type,
                prediction=transport_config.prediction,
                loss_weight=transport_config.loss_weight,
                train_eps=transport_config.train_eps,
                sample_eps=transport_config.sample_eps,
                snr_type=transport_config.snr_type,
                do_shift=transport_config.do_shift,
                seq_len=num_tokens,
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
