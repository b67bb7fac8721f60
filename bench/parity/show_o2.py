"""Official-code adapters against their model's own inference scripts: same tiny weights, prompt, image and seed.

Usage: ``python bench/adapter_parity.py --model show_o2 --official DIR [--env PYTHON_OR_ENV_DIR] [--work DIR]``
(or ``python bench/parity/show_o2.py --official DIR ...``)
where DIR is a checkout of the model's official code (for Show-o2: showlab/Show-o, or its ``show-o2`` folder) and
``--env`` the model's environment (``lmms-eval-unify env create show_o2``; default
``$LMMS_EVAL_UNIFY_MODEL_ENVS/<model>``). Nothing of the official code is copied into this repository.

For Show-o2 the bench

1. builds tiny random assets in the model environment, seeded, from the official classes: a Qwen2.5-like LLM
   folder (config and a byte-level BPE tokenizer with Qwen's special tokens) served by its Hub id from a private,
   offline Hugging Face cache (``utils.path_to_llm_name`` is keyed by the Hub id, so a local path cannot be used),
   a SigLIP folder, a ``Showo2Qwen2_5`` checkpoint (``save_pretrained``, one diffusion layer; its zero-initialised
   output layer is re-drawn so that the velocity depends on the weights, and the LLM's matrices are drawn at std
   0.3 so that greedy decoding does not repeat one token), a ``WanVAE`` ``.pth`` (the official architecture is
   fixed: 127 M parameters; its output convolution is scaled so that few decoded pixels are clamped) and a copy of
   ``configs/showo2_1.5b_demo_432x432.yaml`` at 128 px (16x16 latents, 8x8 patches = 64 image tokens, sequence
   160);
2. runs the official ``inference_mmu.py`` and ``inference_t2i.py`` unmodified, in the model environment, with
   their OmegaConf command line; a ``sitecustomize`` (this file's :func:`install_show_o2_interception`)
   replaces ``wandb`` by a recorder (what the scripts log is their output), makes the safety checker a
   pass-through (``CompVis/stable-diffusion-safety-checker`` is loaded by name), seeds torch's global generator
   right before the scripts' random draws (neither script seeds), and records the official functions' inputs and
   outputs (VAE input and latents, ``mmu_generate``'s token ids, ``prepare_gen_input``'s tokens, each
   ``t2i_generate`` call);
3. runs our backend through the worker (``start_backend(...).call(...)``) on the same assets, with the same
   recorder observing (it draws and seeds nothing there: the worker seeds each call);
4. compares strings, tensors, token ids and pixels exactly. The last line is ``<model>: k/n identical``; the exit
   status is 0 whenever the comparison ran. Results: docs/fidelity/adapters.md.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_COMMON = importlib.util.spec_from_file_location("parity_common", Path(__file__).resolve().with_name("common.py"))
common = sys.modules[_COMMON.name] = importlib.util.module_from_spec(_COMMON)  # loaded by path: see common.py
_COMMON.loader.exec_module(common)
Check = common.Check

CAPTURE_ENV = "ADAPTER_PARITY_CAPTURE"
"""Folder where the interception writes what it records (one file per record)."""
SEED_ENV = "ADAPTER_PARITY_SEED"
"""Seed the interception gives torch's global generator before the official scripts' draws; unset: no seeding."""

# ---------------------------------------------------------------------------------------------------------------
# Show-o2: constants shared by both sides
# ---------------------------------------------------------------------------------------------------------------

SHOW_O2_LLM = "Qwen/Qwen2.5-1.5B-Instruct"
"""The LLM the official YAML names; ``utils.path_to_llm_name`` only knows Hub ids."""
SHOW_O2_SEED = 1234
SHOW_O2_ASSET_SEED = 20260101
SHOW_O2_RESOLUTION = 128
"""Image side: the Wan VAE downsamples by 8 and Show-o2 patches by 2, so 128 px = 8x8 = 64 image tokens."""
SHOW_O2_MAX_SEQ = 160
SHOW_O2_QUESTION = "What is shown in this picture?"
SHOW_O2_PROMPT = "A red apple on a wooden table."
SHOW_O2_GUIDANCE = 5.0
SHOW_O2_STEPS = 3
SHOW_O2_MAX_NEW_TOKENS = 300
"""``inference_mmu.py`` hard-codes ``max_new_tokens=300`` (no option): our side is asked for as many."""
SHOW_O2_INFO_TOKENS = 8
"""Tokens of the uncounted bfloat16 understanding run (compared with the official ids' prefix)."""
SHOW_O2_BACKEND = "lmms_eval_unify.model_adapters.official.show_o2_backend:ShowO2Backend"
SAFETY_CHECKER = "CompVis/stable-diffusion-safety-checker"
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
TOKENIZER_CORPUS = (
    "system\nYou are a helpful assistant.\nuser\nassistant\n"
    "What is shown in this picture? Describe the image in detail. How many objects are there? "
    "A red apple on a wooden table. A photo of a cat sitting on a sofa, a dog running in the park, "
    "the quick brown fox jumps over the lazy dog 0123456789. Answer the question with a single word. "
)


# ---------------------------------------------------------------------------------------------------------------
# Model environment side: asset building (runs with the model environment's python; stdlib + official code)
# ---------------------------------------------------------------------------------------------------------------


def hf_environment(work: Path) -> dict[str, str]:
    """The private, offline Hugging Face cache the tiny by-name LLM lives in."""
    return {"HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def show_o2_paths(work: Path) -> dict[str, Path]:
    return {
        "llm": work / "hf" / "hub" / "models--Qwen--Qwen2.5-1.5B-Instruct" / "snapshots" / ("0" * 40),
        "siglip": work / "siglip",
        "showo": work / "show-o2",
        "vae": work / "Wan2.1_VAE.pth",
        "yaml": work / "showo2_tiny_128x128.yaml",
        "prompts": work / "t2i_prompts.txt",
        "image": work / "mmu_image.png",
    }


def tiny_show_o2_yaml(official: Path, paths: dict[str, Path]) -> Any:
    """The official demo YAML with local assets and a 128 px geometry (every derived size kept consistent)."""
    from omegaconf import OmegaConf

    config = OmegaConf.load(official / "configs" / "showo2_1.5b_demo_432x432.yaml")
    side = SHOW_O2_RESOLUTION // 16  # VAE /8, patch 2
    showo = config.model.showo
    config.model.vae_model.pretrained_model_path = str(paths["vae"])
    showo.pretrained_model_path = str(paths["showo"])
    showo.clip_pretrained_model_path = str(paths["siglip"])
    showo.hidden_size = 64
    showo.clip_latent_dim = 32
    for key in ("image_latent_height", "image_latent_width", "video_latent_height", "video_latent_width"):
        showo[key] = side
    preprocessing = config.dataset.preprocessing
    preprocessing.resolution = SHOW_O2_RESOLUTION
    preprocessing.max_seq_length = SHOW_O2_MAX_SEQ
    preprocessing.num_t2i_image_tokens = side * side
    preprocessing.num_mmu_image_tokens = side * side
    preprocessing.num_video_tokens = 5 * side * side  # 3645 = 5 x 729 in the official file
    config.dataset.params.validation_prompts_file = str(paths["prompts"])
    return config


def build_show_o2_assets(official: Path, work: Path, seed: int) -> dict[str, Any]:
    """Tiny random Show-o2 assets in ``work`` (model environment; official code importable)."""
    os.environ.update(hf_environment(work))
    sys.path.insert(0, str(official))
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from PIL import Image
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import Qwen2Config, Qwen2TokenizerFast
    from transformers.models.siglip.configuration_siglip import SiglipConfig

    paths = show_o2_paths(work)
    torch.manual_seed(seed)
    started = time.perf_counter()

    # LLM folder: config + byte-level BPE tokenizer, in the Hub cache layout under the official Hub id.
    llm = paths["llm"]
    llm.mkdir(parents=True, exist_ok=True)
    (llm.parent.parent / "refs").mkdir(exist_ok=True)
    (llm.parent.parent / "refs" / "main").write_text(llm.name)
    bpe = Tokenizer(BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, min_frequency=1, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([TOKENIZER_CORPUS] * 4, trainer=trainer)
    bpe.add_special_tokens(list(QWEN_SPECIALS))
    tokenizer = Qwen2TokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=[t for t in QWEN_SPECIALS if t not in ("<|endoftext|>", "<|im_end|>")],
        errors="replace",
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )
    tokenizer.save_pretrained(llm)
    Qwen2Config(  # padded past the tokenizer, as Qwen2.5's 151936: Show-o2's resize then shrinks the table
        vocab_size=(len(tokenizer) + 64 + 63) // 64 * 64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        use_sliding_window=False,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        torch_dtype="bfloat16",
        architectures=["Qwen2ForCausalLM"],
    ).save_pretrained(llm)

    import models  # the official package (first on sys.path)
    from models.misc import get_text_tokenizer
    from models.modeling_siglip import SiglipModel
    from models.wan21_vae import WanVAE_

    config = tiny_show_o2_yaml(official, paths)
    paths["yaml"].write_text(OmegaConf.to_yaml(config))
    paths["prompts"].write_text(SHOW_O2_PROMPT + "\n")

    # SigLIP: its vision tower's width is clip_latent_dim, its position table one entry per image token.
    SiglipModel(
        SiglipConfig(
            text_config={
                "vocab_size": 64,
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "max_position_embeddings": 16,
            },
            vision_config={
                "hidden_size": int(config.model.showo.clip_latent_dim),
                "intermediate_size": 64,
                "num_hidden_layers": 2,  # Show-o2 drops the last one
                "num_attention_heads": 2,
                "image_size": SHOW_O2_RESOLUTION,
                "patch_size": 16,
            },
        )
    ).save_pretrained(paths["siglip"])

    # Show-o2, as the official scripts size it: llm_vocab_size = the tokenizer after get_text_tokenizer.
    text_tokenizer = get_text_tokenizer(SHOW_O2_LLM, add_showo_tokens=True, llm_name="qwen2_5")
    showo_args = OmegaConf.to_container(config.model.showo, resolve=True)
    showo_args.update(llm_vocab_size=len(text_tokenizer), num_diffusion_layers=1, llm_model_path=SHOW_O2_LLM)
    model = models.Showo2Qwen2_5(**showo_args)
    with torch.no_grad():
        for layer in (model.diffusion_head_b.adaLN_modulation[-1], model.diffusion_head_b.linear):
            layer.weight.normal_(0.0, 0.02)  # zero-initialised by reset_parameters: v = 0 whatever the weights
            layer.bias.normal_(0.0, 0.02)
        for parameter in model.showo.parameters():  # at std 0.02 greedy decoding repeats one token from the start
            if parameter.dim() == 2:
                parameter.normal_(0.0, 0.3)
    model.save_pretrained(paths["showo"])
    del model

    # Wan VAE: the official architecture (``_video_vae``'s configuration), default init, output conv rescaled.
    vae = WanVAE_(
        dim=96,
        z_dim=16,
        dim_mult=[1, 2, 4, 4],
        num_res_blocks=2,
        attn_scales=[],
        temperal_downsample=[False, True, True],
        dropout=0.0,
    ).eval()
    with torch.no_grad():
        probe = vae.decode(torch.randn(1, 16, 1, 8, 8), [0.0, 1.0])
        head = vae.decoder.head[-1]
        head.weight.mul_(0.5 / float(probe.std()))
        head.bias.zero_()
    torch.save(vae.state_dict(), paths["vae"])
    del vae

    # The understanding image: not square (Resize + CenterCrop matter), seeded.
    rng = np.random.default_rng(seed)
    height, width = 150, 200
    yy, xx = np.mgrid[0:height, 0:width]
    picture = np.stack([xx * 255 // width, yy * 255 // height, (xx + yy) * 255 // (width + height)], -1)
    picture = np.clip(picture + rng.integers(-40, 41, picture.shape), 0, 255).astype(np.uint8)
    Image.fromarray(picture).save(paths["image"])
    return {"seconds": round(time.perf_counter() - started, 1), "llm_vocab_size": len(text_tokenizer)}


# ---------------------------------------------------------------------------------------------------------------
# Model environment side: interception (a sitecustomize in the official runs; an observer in our worker)
# ---------------------------------------------------------------------------------------------------------------


class Recorder(common.Recorder):
    """Writes records to ``$ADAPTER_PARITY_CAPTURE``: arrays as ``.npy`` (tensors as float32 or their integer
    type, their dtype in an ``array`` event), the rest as one JSON line each."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, digits=4)

    def array(self, name: str, value: Any) -> str:
        dtype = str(getattr(value, "dtype", type(value).__name__))
        if hasattr(value, "detach"):  # float32 holds every bf16 value exactly
            value = value.detach().cpu()
            value = value.float() if value.is_floating_point() else value
            value = value.numpy()
        file = super().array(name, value)
        self.event("array", array=name, dtype=dtype)
        return file


def _wandb_stub(recorder: Recorder) -> types.ModuleType:
    """``wandb`` as the scripts use it: ``init``, ``log`` of ``Image`` lists, ``util.generate_id``; what is
    logged is recorded (images as their exact pixel arrays, captions as text)."""
    import numpy as np

    stub = types.ModuleType("wandb")
    stub.__spec__ = importlib.machinery.ModuleSpec("wandb", None)  # importlib.util.find_spec("wandb") is asked

    class Image:
        def __init__(self, data: Any, caption: str | None = None) -> None:
            self.array, self.caption = np.array(data), caption

    def log(data: dict[str, Any], step: int | None = None, **_: Any) -> None:
        for key, items in data.items():
            for index, item in enumerate(items if isinstance(items, list) else [items]):
                if isinstance(item, Image):
                    recorder.array(f"wandb-{step}-{index}", item.array)
                    recorder.event("wandb.log", key=key, step=step, index=index, caption=item.caption)

    stub.Image = Image
    stub.log = log
    stub.init = lambda *args, **kwargs: recorder.event("wandb.init", run=kwargs.get("name"))
    stub.util = types.SimpleNamespace(generate_id=lambda: "adapter-parity")
    return stub


def install_show_o2_interception() -> None:
    """Record the official functions' inputs and outputs; with ``$ADAPTER_PARITY_SEED``, also stub wandb and the
    safety checker and seed torch's global generator right before the scripts' random draws."""
    recorder = Recorder(Path(os.environ[CAPTURE_ENV]))
    seed = os.environ.get(SEED_ENV)
    reference = seed is not None and seed != ""

    def reseed(where: str) -> None:
        if reference:
            import torch

            torch.manual_seed(int(seed))
            recorder.event("seeded", where=where, seed=int(seed))

    def patch_vae(module: types.ModuleType) -> None:
        cls = module.WanVAE
        sample, batch_decode = cls.sample, cls.batch_decode

        @functools.wraps(sample)
        def recorded_sample(self: Any, videos: Any, *args: Any, **kwargs: Any) -> Any:
            reseed("WanVAE.sample")  # understanding: the first draw (the VAE posterior sample)
            recorder.array("vae_input", videos)
            out = sample(self, videos, *args, **kwargs)
            recorder.array("vae_latents", out)
            return out

        @functools.wraps(batch_decode)
        def recorded_decode(self: Any, zs: Any) -> Any:
            recorder.array("vae_decode_input", zs)
            out = batch_decode(self, zs)
            recorder.array("vae_decoded", out)
            return out

        cls.sample, cls.batch_decode = recorded_sample, recorded_decode

    def patch_model(module: types.ModuleType) -> None:
        cls = module.Showo2Qwen2_5
        mmu_generate, t2i_generate = cls.mmu_generate, cls.t2i_generate

        @functools.wraps(mmu_generate)
        def recorded_mmu(self: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.array("mmu_input_embeds", kwargs["input_embeds"])
            recorder.array("mmu_attention_mask", kwargs["attention_mask"])
            out = mmu_generate(self, *args, **kwargs)
            recorder.event("mmu_generate", token_ids=[int(t) for t in out], max_new_tokens=kwargs.get("max_new_tokens"))
            return out

        @functools.wraps(t2i_generate)
        def recorded_t2i(self: Any, *args: Any, **kwargs: Any) -> Any:
            latents = kwargs.get("image_latents", args[0] if args else None)
            steps = kwargs.get("t", args[1] if len(args) > 1 else None)
            recorder.array("t2i_x", latents)
            recorder.array("t2i_t", steps)
            out = t2i_generate(self, *args, **kwargs)
            recorder.array("t2i_v", out)
            return out

        cls.mmu_generate, cls.t2i_generate = recorded_mmu, recorded_t2i

    def patch_misc(module: types.ModuleType) -> None:
        prepare = module.prepare_gen_input

        @functools.wraps(prepare)
        def recorded_prepare(*args: Any, **kwargs: Any) -> Any:
            out = prepare(*args, **kwargs)
            names = ("gen_tokens", "gen_tokens_null", "gen_positions", "gen_positions_null")
            for name, value in zip(names, out, strict=True):
                recorder.array(name, value)
            reseed("prepare_gen_input")  # text-to-image: the next statement draws the initial noise
            return out

        module.prepare_gen_input = recorded_prepare

    def stub_by_name(class_name: str, stub: Any) -> Callable[[types.ModuleType], None]:
        """``module.<class_name>.from_pretrained(SAFETY_CHECKER)`` returns ``stub`` (other names load as usual)."""

        def patch(module: types.ModuleType) -> None:
            cls = getattr(module, class_name)
            original = cls.from_pretrained

            def from_pretrained(name: Any, *args: Any, **kwargs: Any) -> Any:
                if str(name) != SAFETY_CHECKER:
                    return original(name, *args, **kwargs)
                recorder.event("stub", what=f"{class_name}.from_pretrained({SAFETY_CHECKER})")
                return stub

            cls.from_pretrained = staticmethod(from_pretrained)

        return patch

    def check(images: Any, clip_input: Any = None) -> tuple[Any, list[bool]]:  # the safety checker: pass-through
        return images, [False] * len(images)

    patch_feature_extractor = stub_by_name("AutoFeatureExtractor", lambda images=None, **_: {"pixel_values": None})
    patch_safety_checker = stub_by_name("StableDiffusionSafetyChecker", check)

    patches: dict[str, Callable[[types.ModuleType], None]] = {
        "models.wan21_vae": patch_vae,
        "models.modeling_showo2_qwen2_5": patch_model,
        "models.misc": patch_misc,
    }
    if reference:
        sys.modules["wandb"] = _wandb_stub(recorder)
        patches["transformers.models.auto.feature_extraction_auto"] = patch_feature_extractor
        patches["diffusers.pipelines.stable_diffusion.safety_checker"] = patch_safety_checker
    sys.meta_path.insert(0, common.PostImportHooks(patches))
    recorder.event("installed", reference=reference, pid=os.getpid())


# ---------------------------------------------------------------------------------------------------------------
# Evaluator side (this plugin's environment)
# ---------------------------------------------------------------------------------------------------------------


class Captured:
    """What the interception recorded in one process."""

    def __init__(self, folder: Path) -> None:
        import numpy as np

        self.folder = folder
        self.arrays: dict[str, list[Any]] = {}
        for path in sorted(folder.glob("*.npy")):
            self.arrays.setdefault(path.stem.split("-", 1)[1], []).append(np.load(path))
        events = folder / "events.jsonl"
        lines = events.read_text(encoding="utf-8").splitlines() if events.is_file() else []
        self.events = [json.loads(line) for line in lines]
        if not self.event("installed"):
            raise SystemExit(f"the interception was not active in the process recording to {folder}")

    def first(self, name: str) -> Any:
        found = self.arrays.get(name)
        return found[0] if found else None

    def event(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def dtype(self, name: str) -> str:
        return next((event["dtype"] for event in self.event("array") if event["array"] == name), "?")


def compare_arrays(name: str, ours: Any, theirs: Any, dtype: str = "") -> Check:
    import numpy as np

    if ours is None or theirs is None:
        return Check(name, False, f"missing ({'ours' if ours is None else 'official'} not recorded)")
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return Check(name, False, f"shapes differ: ours {ours.shape}, official {theirs.shape}")
    if np.array_equal(ours, theirs):
        return Check(name, True, f"{dtype or theirs.dtype} {list(theirs.shape)} equal")
    diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
    return Check(name, False, f"max abs diff {diff.max():.6g}, {int((diff > 0).sum())}/{diff.size} elements differ")


def compare_token_ids(name: str, ours: list[int], theirs: list[int]) -> Check:
    if ours == theirs:
        return Check(name, True, f"{len(theirs)} ids equal: {theirs[:6]}{' ...' if len(theirs) > 6 else ''}")
    first = common.first_difference(ours, theirs)
    return Check(name, False, f"first difference at index {first} (ours {len(ours)} ids, official {len(theirs)})")


def literal_tokenizer_argument(source: str, variable: str) -> str | None:
    """The string literal of ``variable = text_tokenizer("...", ...)`` in an official script's text."""
    import ast

    match = re.search(rf"^\s*{variable}\s*=\s*text_tokenizer\(\s*(\"(?:[^\"\\]|\\.)*\")", source, re.MULTILINE)
    return None if match is None else ast.literal_eval(match.group(1))


@dataclass
class Session:
    """One model's bench run: the official checkout, the model environment, the scratch folder, the timings."""

    model: str
    checkout: Path
    python: Path
    work: Path
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def commit(self) -> str:
        return common.git_commit(self.checkout)

    def environment(self, **extra: str) -> dict[str, str]:
        """The model processes' variables: ours, the private offline HF cache, no recording unless asked."""
        env = {**os.environ, **hf_environment(self.work), "PYTHONUNBUFFERED": "1", "WANDB_MODE": "disabled"}
        for key in (CAPTURE_ENV, SEED_ENV):
            env.pop(key, None)
        return {**env, **extra}

    def timed(self, what: str, command: list[str], env: dict[str, str], log: str) -> None:
        self.timings[what] = common.run_logged(what, command, self.checkout, env, self.work / log)

    def build_assets(self) -> None:
        """The tiny assets, built in the model environment (reused from ``--work`` when built for this commit)."""
        stamp, key = self.work / "assets.json", {"seed": MODELS[self.model].asset_seed, "commit": self.commit, "v": 1}
        if stamp.is_file() and json.loads(stamp.read_text()).get("key") == key:
            self.notes.append(f"assets reused from {self.work}")
            return
        command = [str(self.python), str(Path(__file__).resolve()), "--model", self.model, "--build-assets"]
        command += ["--official", str(self.checkout), "--work", str(self.work)]
        self.timed("build tiny assets", command, self.environment(), "build.log")
        stamp.write_text(json.dumps({"key": key}))

    def shim(self) -> str:
        """``PYTHONPATH`` with the interception's ``sitecustomize`` first."""
        return common.sitecustomize_path(
            self.work / "shim",
            "adapter_parity_interception",
            Path(__file__),
            MODELS[self.model].interception.__name__,
        )

    def official(self, name: str, script: list[str], seed: int) -> Captured:
        """An official script, unmodified, run by the model environment under the interception (seeding)."""
        folder = self.work / "capture" / name
        shutil.rmtree(folder, ignore_errors=True)
        env = self.environment(PYTHONPATH=self.shim(), **{CAPTURE_ENV: str(folder), SEED_ENV: str(seed)})
        self.timed(f"{script[0]} (official)", [str(self.python), *script], env, f"{name}.log")
        return Captured(folder)

    @contextlib.contextmanager
    def observed(self, name: str) -> Iterator[Path]:
        """Workers started inside see the private HF cache and the interception (recording only, no seeding)."""
        folder = self.work / "capture" / name
        shutil.rmtree(folder, ignore_errors=True)
        updates = {**hf_environment(self.work), "PYTHONPATH": self.shim(), CAPTURE_ENV: str(folder)}
        with common.environ_changed(updates, removed=[SEED_ENV]):
            yield folder


def show_o2_official(session: Session, paths: dict[str, Path]) -> dict[str, Captured]:
    """``inference_mmu.py`` and ``inference_t2i.py`` with their OmegaConf command lines."""
    mmu = [f"config={paths['yaml']}", f"mmu_image_path={paths['image']}", f"question={SHOW_O2_QUESTION}"]
    t2i = [f"config={paths['yaml']}", "batch_size=1", f"guidance_scale={SHOW_O2_GUIDANCE}"]
    t2i.append(f"num_inference_steps={SHOW_O2_STEPS}")
    return {
        "mmu": session.official("official_mmu", ["inference_mmu.py", *mmu], SHOW_O2_SEED),
        "t2i": session.official("official_t2i", ["inference_t2i.py", *t2i], SHOW_O2_SEED),
    }


def show_o2_ours(session: Session, paths: dict[str, Path]) -> tuple[dict[str, Any], dict[str, Captured]]:
    """Our backend in its worker, as the adapter drives it: float32 for understanding (``inference_mmu.py``'s
    ``weight_type``), bfloat16 for generation (the YAML's ``weight_type``) and, not counted, understanding in
    bfloat16 as well (the adapter's default on CUDA)."""
    from PIL import Image

    from lmms_eval_unify.generation.worker import start_backend

    image = Image.open(paths["image"]).convert("RGB")
    configuration = {
        "config": str(paths["yaml"]),
        "pretrained": str(paths["showo"]),
        "vae_path": str(paths["vae"]),
        "device": "cpu",
    }
    results: dict[str, Any] = {}
    captured: dict[str, Captured] = {}
    for dtype in ("float32", "bfloat16"):
        started = time.perf_counter()
        with session.observed(f"ours_{dtype}") as folder:
            worker = start_backend(
                "show_o2", str(session.python), SHOW_O2_BACKEND, session.checkout, {**configuration, "dtype": dtype}
            )
        try:
            if dtype == "float32":
                results["understand"] = worker.call(
                    "understand", image, SHOW_O2_QUESTION, SHOW_O2_MAX_NEW_TOKENS, seed=SHOW_O2_SEED
                )
            else:
                results["generate"] = worker.call(
                    "generate", [SHOW_O2_PROMPT], [SHOW_O2_SEED], SHOW_O2_GUIDANCE, SHOW_O2_STEPS, seed=SHOW_O2_SEED
                )
                results["understand_bf16"] = worker.call(
                    "understand", image, SHOW_O2_QUESTION, SHOW_O2_INFO_TOKENS, seed=SHOW_O2_SEED
                )
        finally:
            worker.close()
        session.timings[f"our worker ({dtype})"] = time.perf_counter() - started
        captured[dtype] = Captured(folder)
    return results, captured


def run_show_o2(session: Session) -> list[Check]:
    import numpy as np
    from lmms_eval_unify.model_adapters.official import show_o2_backend as backend

    session.build_assets()
    paths = show_o2_paths(session.work)
    official = show_o2_official(session, paths)
    ours, observed = show_o2_ours(session, paths)
    mmu, t2i, fp32, bf16 = official["mmu"], official["t2i"], observed["float32"], observed["bfloat16"]
    checks: list[Check] = []

    source = (session.checkout / "inference_mmu.py").read_text(encoding="utf-8")
    strings = {"sys_prompt_ids": backend.SYSTEM_PROMPT, "role_a": backend.USER_TURN, "role_b": backend.ASSISTANT_TURN}
    unequal = [name for name, text in strings.items() if literal_tokenizer_argument(source, name) != text]
    detail = "SYSTEM_PROMPT, USER_TURN, ASSISTANT_TURN == inference_mmu.py's sys_prompt_ids, role_a, role_b"
    checks.append(Check("chat template strings", not unequal, f"differ: {unequal}" if unequal else detail))

    def arrays(title: str, name: str, ours_capture: Captured, official_capture: Captured) -> Check:
        dtype = official_capture.dtype(name).removeprefix("torch.")
        return compare_arrays(title, ours_capture.first(name), official_capture.first(name), dtype)

    # What reaches the VAE: the script's image_transform; ours after the worker's PNG transfer and the backend.
    checks.append(arrays("image preprocessing (VAE input)", "vae_input", fp32, mmu))
    checks.append(arrays("mmu VAE latents (seeded draw)", "vae_latents", fp32, mmu))
    checks.append(arrays("mmu input embeddings", "mmu_input_embeds", fp32, mmu))
    checks.append(arrays("mmu attention mask", "mmu_attention_mask", fp32, mmu))
    generated = mmu.event("mmu_generate")
    official_ids = generated[0]["token_ids"] if generated else []
    checks.append(compare_token_ids("mmu token ids (fp32)", list(ours["understand"]["token_ids"]), official_ids))
    logged = mmu.event("wandb.log")
    caption = str(logged[0]["caption"]) if logged else ""
    prefix = f"User: {SHOW_O2_QUESTION}\n Answer : "
    official_text = caption[len(prefix) : -1] if caption.startswith(prefix) else None
    same_text = official_text is not None and ours["understand"]["text"] == official_text
    detail = f"{len(official_text or '')} chars, from the caption wandb.log got ('User: ...\\n Answer : TEXT\\n')"
    checks.append(Check("mmu answer text", same_text, detail))

    checks.append(arrays("t2i prompt tokens", "gen_tokens", bf16, t2i))
    checks.append(arrays("t2i initial noise (seeded draw)", "t2i_x", bf16, t2i))
    ours_v, official_v = bf16.arrays.get("t2i_v", []), t2i.arrays.get("t2i_v", [])
    checks.append(
        compare_arrays(
            f"t2i velocities ({len(official_v)} ODE calls)",
            np.stack(ours_v) if ours_v else None,
            np.stack(official_v) if official_v else None,
            t2i.dtype("t2i_v").removeprefix("torch."),
        )
    )
    logged_images = t2i.arrays.get("wandb-0-0", [])
    picture = np.array(ours["generate"][0].convert("RGB"))
    checks.append(compare_arrays("t2i image pixels", picture, logged_images[0] if logged_images else None))

    ids = compare_token_ids("", list(ours["understand_bf16"]["token_ids"]), official_ids[:SHOW_O2_INFO_TOKENS])
    embeds = compare_arrays("", bf16.first("mmu_input_embeds"), mmu.first("mmu_input_embeds"))
    session.notes.append(
        "not counted: understanding with dtype=bfloat16 (the adapter's default on CUDA) against the fp32 script: "
        f"ids {'equal' if ids.identical else ids.detail}; input embeddings {embeds.detail}"
    )
    stubs = [event["what"] for event in t2i.event("stub")]
    session.notes.append(f"stubbed in the official runs: wandb (recorder), {', '.join(stubs) or 'nothing else'}")
    seeded = [f"{event['where']} ({event['seed']})" for capture in (mmu, t2i) for event in capture.event("seeded")]
    session.notes.append(f"official runs: torch.manual_seed right before {', '.join(seeded)}; ours: the worker's seed=")
    return checks


@dataclass(frozen=True)
class ParityModel:
    """A model the bench knows: where its official code lives, how to build its tiny assets (model environment),
    how to intercept its official scripts (model environment), and the comparison (this environment)."""

    checkout_folder: str | None
    asset_seed: int
    build_assets: Callable[[Path, Path, int], dict[str, Any]]
    interception: Callable[[], None]
    run: Callable[[Session], list[Check]]


MODELS: dict[str, ParityModel] = {
    "show_o2": ParityModel(
        "show-o2", SHOW_O2_ASSET_SEED, build_show_o2_assets, install_show_o2_interception, run_show_o2
    )
}


def official_checkout(model: str, official: Path) -> Path:
    """The folder holding the official ``models/`` package (``--official`` may be the repository root)."""
    nested = MODELS[model].checkout_folder
    for candidate in (official / nested if nested else official, official):
        if (candidate / "models" / "__init__.py").is_file():
            return candidate.resolve()
    raise SystemExit(f"{official}: no official {model} checkout (no models/__init__.py)")


def print_table(model: str, checks: list[Check], notes: list[str]) -> None:
    width = max(len(check.name) for check in checks)
    print(f"{'check'.ljust(width)}  result     detail")
    print(f"{'-' * width}  ---------  ------")
    for check in checks:
        print(f"{check.name.ljust(width)}  {'identical' if check.identical else 'DIFFERS  '}  {check.detail}")
    for note in notes:
        print(f"# {note}")
    print(common.verdict(model, checks))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="show_o2", choices=sorted(MODELS))
    parser.add_argument("--official", required=True, help="checkout of the model's official code")
    parser.add_argument("--env", help="the model environment (folder or its python)")
    parser.add_argument("--work", help="scratch folder (kept; assets reused); default: a temporary folder")
    parser.add_argument("--build-assets", action="store_true", help=argparse.SUPPRESS)  # model environment side
    args = parser.parse_args(argv)
    model = MODELS[args.model]
    if args.build_assets:
        print(json.dumps(model.build_assets(Path(args.official), Path(args.work), model.asset_seed)))
        return 0

    from lmms_eval_unify.generation.worker import environment_python

    started = time.perf_counter()
    checkout = official_checkout(args.model, Path(args.official))
    python = environment_python(args.model, args.env)
    if python is None or not python.is_file():
        raise SystemExit(f"{args.model}: no model environment interpreter at {python}; pass --env")
    with contextlib.ExitStack() as stack:
        if args.work:
            work = Path(args.work).resolve()
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"adapter_parity_{args.model}_")))
        session = Session(args.model, checkout, python, work)
        session.notes += [f"official code: {checkout} @ {session.commit}", f"model environment: {python}"]
        checks = model.run(session)
    session.notes.append("seconds: " + ", ".join(f"{key} {value:.1f}" for key, value in session.timings.items()))
    session.notes.append(f"total {time.perf_counter() - started:.1f} s wall")
    print_table(args.model, checks, session.notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
