"""BAGEL's official ``InterleaveInferencer`` (ByteDance-Seed/Bagel), run in the model's environment.

This module runs inside the worker (:mod:`lmms_eval_unify.generation.worker_main`), with the checkout first on
``sys.path``. It loads the model as the official ``app.py`` does (bf16, dispatched over the visible GPUs) and
passes ``interleave_inference`` calls through. The official code needs a CUDA GPU: ``modeling/bagel/qwen2_navit.py``
imports ``flash_attn_varlen_func`` at module level and always calls it, and ``inferencer.py`` runs under
``torch.autocast("cuda")``.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import torch

from lmms_eval_unify.generation.worker_main import import_problems

CHECKED_COMMIT: str | None = None
"""The BAGEL commit this backend was checked against: none yet (its official code needs a GPU to run)."""
MODULES = (
    "modeling.bagel",
    "data.data_utils",
    "data.transforms",
    "modeling.autoencoder",
    "modeling.qwen2",
    "inferencer",
)
WEIGHT_FILES = ("llm_config.json", "vit_config.json", "ae.safetensors", "ema.safetensors")
SAME_DEVICE_MODULES = (
    "language_model.model.embed_tokens",
    "time_embedder",
    "latent_pos_embed",
    "vae2llm",
    "llm2vae",
    "connector",
    "vit_pos_embed",
)


def probe(configuration: dict[str, Any]) -> list[dict[str, str]]:
    """What the worker lacks: flash-attn, or an official module that does not import."""
    if importlib.util.find_spec("flash_attn") is None:
        what = "the official code imports flash_attn, which the model environment does not hold"
        return [{"kind": "code", "what": what, "fix": "install flash_attn==2.5.8 there (docs/models/bagel.md)"}]
    return import_problems("bagel", MODULES)


def load_inferencer(weights: Path, max_memory_gib: int = 80) -> Any:
    """The official model (bf16, dispatched over the visible GPUs) wrapped in ``InterleaveInferencer``."""
    from accelerate import infer_auto_device_map, init_empty_weights, load_checkpoint_and_dispatch

    bagel, data_utils, transforms, autoencoder, qwen2, inferencer = (importlib.import_module(m) for m in MODULES)

    llm_config = bagel.Qwen2Config.from_json_file(str(weights / "llm_config.json"))
    llm_config.qk_norm, llm_config.tie_word_embeddings = True, False
    llm_config.layer_module = "Qwen2MoTDecoderLayer"
    vit_config = bagel.SiglipVisionConfig.from_json_file(str(weights / "vit_config.json"))
    vit_config.rope = False
    vit_config.num_hidden_layers -= 1
    vae_model, vae_config = autoencoder.load_ae(local_path=str(weights / "ae.safetensors"))
    config = bagel.BagelConfig(
        visual_gen=True,
        visual_und=True,
        llm_config=llm_config,
        vit_config=vit_config,
        vae_config=vae_config,
        vit_max_num_patch_per_side=70,
        connector_act="gelu_pytorch_tanh",
        latent_patch_size=2,
        max_latent_size=64,
    )
    with init_empty_weights():
        model = bagel.Bagel(bagel.Qwen2ForCausalLM(llm_config), bagel.SiglipVisionModel(vit_config), config)
        model.vit_model.vision_model.embeddings.convert_conv2d_to_linear(vit_config, meta=True)
    tokenizer = qwen2.Qwen2Tokenizer.from_pretrained(str(weights))
    tokenizer, new_token_ids, _ = data_utils.add_special_tokens(tokenizer)
    device_map = infer_auto_device_map(
        model,
        max_memory={i: f"{max_memory_gib}GiB" for i in range(torch.cuda.device_count())},
        no_split_module_classes=["Bagel", "Qwen2MoTDecoderLayer"],
    )
    first = device_map.get(SAME_DEVICE_MODULES[0], "cuda:0")
    device_map.update({name: first for name in SAME_DEVICE_MODULES})
    model = load_checkpoint_and_dispatch(
        model,
        checkpoint=str(weights / "ema.safetensors"),
        device_map=device_map,
        offload_buffers=True,
        dtype=torch.bfloat16,
        force_hooks=True,
    ).eval()
    return inferencer.InterleaveInferencer(
        model=model,
        vae_model=vae_model.to(first, dtype=torch.bfloat16),
        tokenizer=tokenizer,
        vae_transform=transforms.ImageTransform(1024, 512, 16),
        vit_transform=transforms.ImageTransform(980, 224, 14),
        new_token_ids=new_token_ids,
    )


class BagelBackend:
    """The official inferencer over the weights folder ``weights``."""

    def __init__(self, weights: str) -> None:
        self.inferencer = load_inferencer(Path(weights))

    def interleave_inference(self, inputs: list[Any], **settings: Any) -> list[Any]:
        """``InterleaveInferencer.interleave_inference(inputs, **settings)``: its texts and images, in order."""
        if "image_shapes" in settings:
            settings["image_shapes"] = tuple(settings["image_shapes"])
        return list(self.inferencer.interleave_inference(inputs, **settings))
