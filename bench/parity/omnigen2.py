"""OmniGen2 parity: our adapter's backend against the official ``inference.py`` / ``inference_chat.py``.

Usage: ``python bench/parity/omnigen2.py --official DIR [--env ENV] [--work DIR]``, where DIR is a checkout of
github.com/VectorSpaceLab/OmniGen2 and ENV the model environment (a folder or its python; default
``$LMMS_EVAL_UNIFY_MODEL_ENVS/omnigen2``). Nothing of the official code is copied into this repository: the
official modules are imported from the checkout, in the model environment, at run time.

1. Tiny random weights, seeded, built in the model environment (a subprocess running this file with
   ``--build``) from the official classes and saved with ``save_pretrained``: ``OmniGen2Transformer2DModel``
   (2 layers, width 32; its zero-initialised output and modulation layers re-drawn so the velocity depends on
   the weights), the checkout's ``FlowMatchEulerDiscreteScheduler`` (the pipeline passes it ``num_tokens``,
   which only the official scheduler accepts), a 4-level ``AutoencoderKL`` (scale factor 8, 16 latent
   channels as FLUX's VAE, 8 channels wide), a 2-layer Qwen2.5-VL and a ``Qwen2_5_VLProcessor`` whose byte-level
   BPE tokenizer is trained in memory (no Hub). ``model_index.json`` names the custom classes by their module
   path in the checkout (``save_pretrained`` writes that itself), so ``from_pretrained(...,
   trust_remote_code=True)`` imports them from the checkout rather than from files in the weights folder.
2. Reference: the official scripts, unmodified, run by the model environment's python from the checkout with
   their own command line (tiny ``--height/--width 64``, ``--num_inference_step 2``, ``--seed``; every other
   option at its default, ``bf16`` included). A ``sitecustomize`` (this file's :func:`install_interception`,
   on ``PYTHONPATH``) records each pipeline call (its keyword arguments, a hash of torch's global CPU
   generator state) and its raw output (the PIL images as uint8 arrays, before ``inference.py``'s lossy collage
   save; the chat text and the token ids ``mllm.generate`` returned). In the reference runs it also
   (a) seeds torch's global generator with the script's ``--seed`` right before the pipeline call (neither
   script seeds it, and editing samples the VAE posterior from it; our worker seeds it per call), (b) switches
   off triton's CUDA probe (``omnigen2.utils.import_utils._triton_available = False``) when torch sees no GPU,
   exactly as our backend does, since importing the model code otherwise fails with the CUDA wheel, and
   (c) for ``inference_chat.py`` only, gives the parsed arguments the ``scheduler="euler"`` it reads but never
   declares (``args.scheduler == "dpmsolver"`` is then false: the scheduler from ``model_index.json`` is kept,
   as ``inference.py``'s default ``--scheduler euler`` does and as our backend does).
3. Ours: the same weights through ``start_backend(...)`` (our worker, in the model environment) and
   ``.call("generate" | "chat", SEED, seed=SEED, **settings)`` with ``settings`` exactly what
   ``OmniGen2._settings(prompt, images)`` builds from ``OmniGen2Settings(num_inference_steps=2, height=64,
   width=64)``; the same interception observes (it seeds and patches nothing there).
4. Checks: the adapter's default settings against ``inference.py``'s defaults (read from its source: argparse
   defaults and the literals of its pipeline call), each pipeline call's arguments, t2i and edit pixels
   (``np.array_equal``), chat token ids and text. The last line is ``omnigen2: k/n identical``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_COMMON = importlib.util.spec_from_file_location("parity_common", Path(__file__).resolve().with_name("common.py"))
common = sys.modules[_COMMON.name] = importlib.util.module_from_spec(_COMMON)  # loaded by path: see common.py
_COMMON.loader.exec_module(common)

MODEL_ID = "omnigen2"
BACKEND = "lmms_eval_unify.model_adapters.official.omnigen2_backend:OmniGen2Backend"
CAPTURE_ENV = "OMNIGEN2_PARITY_CAPTURE"
"""Folder where the interception writes what it records."""
SEED_ENV = "OMNIGEN2_PARITY_SEED"
"""Reference runs only: the seed given to torch's global generator right before the pipeline call."""
SCHEDULER_ENV = "OMNIGEN2_PARITY_SCHEDULER"
"""``inference_chat.py`` only: the value of the ``args.scheduler`` it reads but never declares."""

SEED = 1234
"""The scripts' ``--seed`` (their generator) and, on both sides, torch's global generator before each call."""
WEIGHT_SEED = 20260101
SIZE = 64
"""``--height/--width`` (inference.py's default 1024): the VAE downsamples by 8 and the transformer patches by 2,
so 64 px is 4x4 = 16 image tokens."""
STEPS = 2
"""``--num_inference_step`` (inference.py's default 50)."""
EDIT_SIZE = (64, 48)
"""The edit input (width, height): one input image sets the output size (the pipeline's ``align_res``)."""
T2I_PROMPT = "A red apple on a wooden table."
EDIT_PROMPT = "Change the background to a blue sky."
CHAT_PROMPT = "Describe the key features of the input image (color, shape, size, texture, objects)."
WEIGHTS_VERSION = 2

SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|img|>",
]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's chat format (``OmniGen2Pipeline._apply_chat_template`` renders system + user through it)."""


# ---------------------------------------------------------------------------------------------------------------
# Model environment: tiny weights
# ---------------------------------------------------------------------------------------------------------------


def _tiny_tokenizer(corpus: list[str]) -> Any:
    """A byte-level BPE with Qwen's special tokens, trained in memory on the prompts the bench uses."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2TokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    backend.train_from_iterator(corpus, trainer)
    tokenizer = Qwen2TokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None, bos_token=None
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_weights(official: Path, folder: Path, seed: int) -> None:
    """The tiny OmniGen2 folder (run by the model environment's python, the checkout first on ``sys.path``)."""
    import numpy as np
    import torch

    if not torch.cuda.is_available():
        importlib.import_module("omnigen2.utils.import_utils")._triton_available = False
    from diffusers import AutoencoderKL
    from omnigen2.models.transformers.transformer_omnigen2 import OmniGen2Transformer2DModel
    from omnigen2.pipelines.omnigen2.pipeline_omnigen2 import OmniGen2Pipeline
    from omnigen2.schedulers.scheduling_flow_match_euler_discrete import FlowMatchEulerDiscreteScheduler
    from PIL import Image
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    torch.manual_seed(seed)
    negative = _inference_defaults(official / "inference.py")["negative_prompt"]
    system = "You are a helpful assistant that generates high-quality images based on user instructions."
    tokenizer = _tiny_tokenizer([T2I_PROMPT, EDIT_PROMPT, CHAT_PROMPT, negative, system])
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIALS}
    config = Qwen2_5_VLConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 16,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=False,
    )
    mllm = Qwen2_5_VLForConditionalGeneration(config).eval()
    mllm.generation_config.eos_token_id = ids["<|im_end|>"]
    mllm.generation_config.pad_token_id = ids["<|endoftext|>"]
    mllm.generation_config.bos_token_id = ids["<|endoftext|>"]
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=56 * 56),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 4,
        up_block_types=["UpDecoderBlock2D"] * 4,
        block_out_channels=[8, 8, 8, 8],
        layers_per_block=1,
        latent_channels=16,
        norm_num_groups=4,
        sample_size=SIZE,
        scaling_factor=0.3611,
        shift_factor=0.1159,
        use_quant_conv=False,
        use_post_quant_conv=False,
    )
    transformer = OmniGen2Transformer2DModel(
        patch_size=2,
        in_channels=16,
        hidden_size=32,
        num_layers=2,
        num_refiner_layers=1,
        num_attention_heads=2,
        num_kv_heads=1,
        multiple_of=16,
        axes_dim_rope=(4, 6, 6),
        axes_lens=(1024, 1664, 1664),
        text_feat_dim=16,
        timestep_scale=1000.0,
    )
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():  # the official init zeroes the output and modulation layers: the velocity would be 0
        for parameter in transformer.parameters():
            if not parameter.any():
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    pipeline = OmniGen2Pipeline(
        transformer=transformer,
        vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(dynamic_time_shift=True),
        mllm=mllm,
        processor=processor,
    )
    shutil.rmtree(folder, ignore_errors=True)
    pipeline.save_pretrained(folder)
    rng = np.random.default_rng(seed)
    width, height = EDIT_SIZE
    yy, xx = np.mgrid[0:height, 0:width]
    smooth = np.stack([xx * 255 / width, yy * 255 / height, (xx + yy) * 255 / (width + height)], axis=-1)
    pixels = np.clip(smooth + rng.normal(0, 24, smooth.shape), 0, 255).astype(np.uint8)
    Image.fromarray(pixels, "RGB").save(folder.parent / "input.png")


# ---------------------------------------------------------------------------------------------------------------
# Model environment: interception (a sitecustomize in the official runs and in our worker)
# ---------------------------------------------------------------------------------------------------------------


def describe(value: Any) -> Any:
    """A JSON picture of a pipeline argument: images by size, mode and pixel hash, generators by seed."""
    if hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size"):
        digest = hashlib.sha256(value.tobytes()).hexdigest()[:16]
        return {"image": list(value.size), "mode": value.mode, "sha256": digest}
    if type(value).__name__ == "Generator" and hasattr(value, "initial_seed"):
        return {"generator": str(value.device), "initial_seed": value.initial_seed()}
    if isinstance(value, list | tuple):
        return [describe(item) for item in value]
    if isinstance(value, dict):
        return {str(key): describe(item) for key, item in sorted(value.items())}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def install_interception() -> None:
    """Record each OmniGen2 pipeline call and its raw output; in the reference runs (``$OMNIGEN2_PARITY_SEED``
    set) also seed torch's global generator before the call, switch off triton's CUDA probe without a GPU, and
    give ``inference_chat.py`` its undeclared ``args.scheduler``."""
    recorder = common.Recorder(Path(os.environ[CAPTURE_ENV]))  # .npy files 001-..., events.jsonl
    seed = os.environ.get(SEED_ENV) or None
    scheduler = os.environ.get(SCHEDULER_ENV) or None

    if scheduler:
        parse_args = argparse.ArgumentParser.parse_args

        @functools.wraps(parse_args)
        def parse_args_with_scheduler(self: Any, *args: Any, **kwargs: Any) -> Any:
            namespace = parse_args(self, *args, **kwargs)
            if not hasattr(namespace, "scheduler"):
                namespace.scheduler = scheduler
                recorder.event("args.scheduler", value=scheduler)
            return namespace

        argparse.ArgumentParser.parse_args = parse_args_with_scheduler  # type: ignore[method-assign]

    def no_triton_probe(module: types.ModuleType) -> None:
        import torch

        if not torch.cuda.is_available():
            module._triton_available = False
            recorder.event("triton probe off")

    def wrap_call(class_name: str) -> Callable[[types.ModuleType], None]:
        def patch(module: types.ModuleType) -> None:
            cls = getattr(module, class_name)
            original = cls.__call__

            @functools.wraps(original)
            def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                import numpy as np
                import torch

                if seed is not None:
                    torch.manual_seed(int(seed))
                rng = hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest()[:16]
                recorder.event("call", pipeline=class_name, args=describe(list(args)), kwargs=describe(kwargs), rng=rng)
                mllm, generate = self.mllm, self.mllm.generate

                def recorded_generate(*g_args: Any, **g_kwargs: Any) -> Any:
                    out = generate(*g_args, **g_kwargs)
                    inputs = g_kwargs.get("input_ids")
                    recorder.event(
                        "mllm.generate",
                        input_ids=inputs[0].tolist() if inputs is not None else None,
                        output_ids=out[0].tolist(),
                    )
                    return out

                mllm.generate = recorded_generate
                try:
                    result = original(self, *args, **kwargs)
                finally:
                    del mllm.generate
                images = getattr(result, "images", None) or []
                files = [recorder.array(f"image{i}", np.array(image)) for i, image in enumerate(images)]
                recorder.event("result", pipeline=class_name, images=files, text=getattr(result, "text", None))
                return result

            cls.__call__ = call

        return patch

    patches = {
        "omnigen2.pipelines.omnigen2.pipeline_omnigen2": wrap_call("OmniGen2Pipeline"),
        "omnigen2.pipelines.omnigen2.pipeline_omnigen2_chat": wrap_call("OmniGen2ChatPipeline"),
    }
    if seed is not None:
        patches["omnigen2.utils.import_utils"] = no_triton_probe
    sys.meta_path.insert(0, common.PostImportHooks(patches))


# ---------------------------------------------------------------------------------------------------------------
# Evaluator side
# ---------------------------------------------------------------------------------------------------------------


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _inference_defaults(script: Path) -> dict[str, Any]:
    """The argparse defaults of an official script, read from its source (``--a_b`` -> ``a_b``)."""
    defaults: dict[str, Any] = {}
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument" and node.args:
            flag = _literal(node.args[0])
            if isinstance(flag, str) and flag.startswith("--"):
                keywords = {k.arg: k.value for k in node.keywords}
                default = _literal(keywords["default"]) if "default" in keywords else None
                if "action" in keywords and _literal(keywords["action"]) == "store_true":
                    default = False
                defaults[flag[2:].replace("-", "_")] = default
    return defaults


def official_call_settings(script: Path) -> dict[str, Any]:
    """The keyword arguments ``inference.py`` passes to the pipeline with every option at its default: literals
    as written, ``args.X`` as X's default, ``(args.X, args.Y)`` as a tuple, a bare name as the option of that
    name (``negative_prompt``)."""
    defaults = _inference_defaults(script)

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            return defaults.get(node.attr)
        if isinstance(node, ast.Tuple):
            return tuple(value(item) for item in node.elts)
        if isinstance(node, ast.Name):
            return defaults.get(node.id, f"<{node.id}>")
        literal = _literal(node)
        return literal if literal is not None else f"<{ast.unparse(node)}>"

    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "pipeline":
                    return {k.arg: value(k.value) for k in call.keywords if k.arg}
    raise ValueError(f"no pipeline(...) call in run() of {script}")


def adapter_settings(prompt: str, images: list[Any], **overrides: Any) -> dict[str, Any]:
    """What ``OmniGen2._settings`` sends for ``OmniGen2Settings(**overrides)``, without building the model."""
    from lmms_eval_unify.model_adapters.omnigen2 import OmniGen2, OmniGen2Settings

    adapter = OmniGen2.__new__(OmniGen2)
    adapter.settings = OmniGen2Settings(**overrides)
    return OmniGen2._settings(adapter, prompt, images)


class Captured:
    """What the interception recorded in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        path = folder / "events.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        self.events = [json.loads(line) for line in lines]

    def all(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]

    def calls(self, pipeline: str) -> list[dict[str, Any]]:
        return [event for event in self.all("call") if event["pipeline"] == pipeline]

    def results(self, pipeline: str) -> list[dict[str, Any]]:
        return [event for event in self.all("result") if event["pipeline"] == pipeline]

    def image(self, pipeline: str, index: int = 0) -> Any:
        import numpy as np

        return np.load(self.folder / self.results(pipeline)[index]["images"][0])


Check = tuple[str, bool, str]
NOTES: list[str] = []
"""What the last :func:`checks` run noted (commit, sizes, timings): printed under the table."""


def compare_images(name: str, ours: Any, theirs: Any) -> Check:
    import numpy as np

    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return name, False, f"shape ours {ours.shape} != official {theirs.shape}"
    same = bool(np.array_equal(ours, theirs))
    diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    detail = f"{'x'.join(map(str, ours.shape))} {ours.dtype}; max abs diff {int(diff.max())}"
    if not same:
        detail += f", {int((diff > 0).any(-1).sum())} px differ"
    else:
        detail += f", {len(np.unique(ours.reshape(-1, ours.shape[-1]), axis=0))} distinct colours"
    return name, same, detail


def compare_values(name: str, ours: Any, theirs: Any, show: int = 160) -> Check:
    same = ours == theirs
    if same:
        text = json.dumps(ours) if not isinstance(ours, str) else repr(ours)
        return name, True, text if len(text) <= show else text[: show - 3] + "..."
    return name, False, f"ours {ours!r} != official {theirs!r}"


def compare_calls(name: str, ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> Check:
    if len(ours) != 1 or len(theirs) != 1:
        return name, False, f"{len(ours)} call(s) ours, {len(theirs)} official"
    a, b = {**ours[0]["kwargs"], "<rng>": ours[0]["rng"]}, {**theirs[0]["kwargs"], "<rng>": theirs[0]["rng"]}
    differing = sorted(key for key in a.keys() | b.keys() if a.get(key, "<absent>") != b.get(key, "<absent>"))
    if ours[0]["args"] != theirs[0]["args"]:
        differing.insert(0, "<positional>")
    if differing:
        return (
            name,
            False,
            "; ".join(f"{k}: ours {a.get(k, '<absent>')!r} official {b.get(k, '<absent>')!r}" for k in differing),
        )
    keys = [k for k in sorted(a) if k not in ("<rng>",)]
    return name, True, f"{len(keys)} kwargs and global RNG state equal ({', '.join(keys)})"


def compare_ids(name: str, ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> Check:
    if len(ours) != 1 or len(theirs) != 1:
        return name, False, f"{len(ours)} mllm.generate call(s) ours, {len(theirs)} official"
    a, b = ours[0]["output_ids"], theirs[0]["output_ids"]
    if ours[0]["input_ids"] != theirs[0]["input_ids"]:
        return name, False, "the prompt's token ids differ"
    prompt = len(ours[0]["input_ids"] or [])
    if a == b:
        return name, True, f"{prompt} prompt + {len(a) - prompt} generated ids equal"
    first = common.first_difference(a, b)
    return (
        name,
        False,
        f"first difference at {first - prompt} (ours {a[first : first + 5]}, official {b[first : first + 5]})",
    )


class Session:
    def __init__(self, official: Path, work: Path, env: str | None) -> None:
        from lmms_eval_unify.generation.worker import environment_python

        self.official = official.resolve()
        self.work = work.resolve()
        self.env = env
        python = environment_python(MODEL_ID, env)
        if python is None:
            raise SystemExit("the bench runs the official scripts in the model environment: env=current is not one")
        self.python = python
        self.timings: dict[str, float] = {}
        self.notes: list[str] = []
        self.work.mkdir(parents=True, exist_ok=True)

    @property
    def commit(self) -> str:
        return common.git_commit(self.official)

    @property
    def weights(self) -> Path:
        return self.work / "weights"

    @property
    def input_image(self) -> Path:
        return self.work / "input.png"

    def environment(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        for key in (CAPTURE_ENV, SEED_ENV, SCHEDULER_ENV):
            env.pop(key, None)
        return {**env, **extra}

    def timed(self, what: str, command: list[str], env: dict[str, str], log: str) -> None:
        self.timings[what] = common.run_logged(what, command, self.official, env, self.work / log)

    def build_weights(self) -> None:
        stamp = self.work / "weights.json"
        key = {"seed": WEIGHT_SEED, "commit": self.commit, "v": WEIGHTS_VERSION, "python": str(self.python)}
        if stamp.is_file() and json.loads(stamp.read_text()).get("key") == key and self.input_image.is_file():
            self.notes.append(f"tiny weights reused from {self.weights}")
            return
        command = [str(self.python), str(Path(__file__).resolve()), "--build"]
        command += ["--official", str(self.official), "--work", str(self.work)]
        self.timed("build tiny weights", command, self.environment(), "build.log")
        stamp.write_text(json.dumps({"key": key}))

    def shim(self) -> str:
        return common.sitecustomize_path(
            self.work / "shim", "omnigen2_parity_interception", Path(__file__), "install_interception"
        )

    def official_run(self, name: str, script: str, arguments: list[str], **extra: str) -> Captured:
        folder = self.work / "capture" / name
        shutil.rmtree(folder, ignore_errors=True)
        env = self.environment(PYTHONPATH=self.shim(), **{CAPTURE_ENV: str(folder), SEED_ENV: str(SEED)}, **extra)
        self.timed(f"{script} {name} (official)", [str(self.python), script, *arguments], env, f"{name}.log")
        return Captured(folder)

    @contextlib.contextmanager
    def observed(self, name: str) -> Iterator[Path]:
        """Workers started inside see the interception (recording only: no seeding, no patching)."""
        folder = self.work / "capture" / name
        shutil.rmtree(folder, ignore_errors=True)
        updates = {"PYTHONPATH": self.shim(), CAPTURE_ENV: str(folder), "HF_HUB_OFFLINE": "1"}
        with common.environ_changed(updates, removed=[SEED_ENV, SCHEDULER_ENV]):
            yield folder


def default_settings_checks(official: Path) -> list[Check]:
    """The adapter's defaults (``OmniGen2Settings()``) against ``inference.py``'s pipeline call at its defaults."""
    theirs = official_call_settings(official / "inference.py")
    ours = adapter_settings("prompt", [])
    checks = []
    for key in ("num_inference_steps", "text_guidance_scale", "image_guidance_scale", "cfg_range"):
        checks.append(compare_values(f"default {key}", ours.get(key), theirs.get(key)))
    checks.append(
        compare_values("default negative_prompt", ours.get("negative_prompt"), theirs.get("negative_prompt"), 60)
    )
    checks.append(
        compare_values(
            "default max_sequence_length", ours.get("max_sequence_length"), theirs.get("max_sequence_length")
        )
    )
    size = lambda s: [s.get("height"), s.get("width")]  # noqa: E731
    checks.append(compare_values("default height/width", size(ours), size(theirs)))
    return checks


def checks(official: Path, work: Path, env: str | None) -> list[Check]:
    """Each check: (name, identical?, detail)."""
    from PIL import Image

    session = Session(official, work, env)
    result = default_settings_checks(session.official)
    session.build_weights()
    weights, image_path = str(session.weights), str(session.input_image)
    common = ["--model_path", weights, "--num_inference_step", str(STEPS), "--seed", str(SEED)]
    common += ["--height", str(SIZE), "--width", str(SIZE)]
    out = session.work / "official-out"
    ref_t2i = session.official_run(
        "t2i", "inference.py", [*common, "--instruction", T2I_PROMPT, "--output_image_path", str(out / "t2i.png")]
    )
    ref_edit = session.official_run(
        "edit",
        "inference.py",
        [
            *common,
            "--instruction",
            EDIT_PROMPT,
            "--input_image_path",
            image_path,
            "--output_image_path",
            str(out / "edit.png"),
        ],
    )
    ref_chat = session.official_run(
        "chat",
        "inference_chat.py",
        [
            *common,
            "--instruction",
            CHAT_PROMPT,
            "--input_image_path",
            image_path,
            "--output_image_path",
            str(out / "chat.png"),
        ],
        **{SCHEDULER_ENV: "euler"},
    )
    if not ref_chat.all("args.scheduler"):
        session.notes.append("inference_chat.py declared --scheduler itself: nothing supplied")

    import torch

    from lmms_eval_unify.generation.worker import start_backend

    device = "cuda" if torch.cuda.is_available() else "cpu"
    configuration = {"pretrained": weights, "device": device, "dtype": "bfloat16"}  # inference.py's --dtype bf16
    tiny = {"num_inference_steps": STEPS, "height": SIZE, "width": SIZE}
    with Image.open(image_path) as opened:
        edit_input = opened.copy()
    with session.observed("ours") as folder:
        started = time.perf_counter()
        backend = start_backend(MODEL_ID, env, BACKEND, session.official, configuration)
        try:
            t2i = backend.call("generate", SEED, seed=SEED, **adapter_settings(T2I_PROMPT, [], **tiny))
            edit = backend.call("generate", SEED, seed=SEED, **adapter_settings(EDIT_PROMPT, [edit_input], **tiny))
            text = backend.call("chat", SEED, seed=SEED, **adapter_settings(CHAT_PROMPT, [edit_input], **tiny))
        finally:
            backend.close()
        session.timings["our worker: t2i + edit + chat"] = time.perf_counter() - started
    ours = Captured(folder)

    pipe, chat = "OmniGen2Pipeline", "OmniGen2ChatPipeline"
    result.append(compare_calls("t2i pipeline call", ours.calls(pipe)[:1], ref_t2i.calls(pipe)))
    result.append(compare_images("t2i image", t2i[0], ref_t2i.image(pipe)))
    result.append(compare_calls("edit pipeline call", ours.calls(pipe)[1:2], ref_edit.calls(pipe)))
    result.append(compare_images("edit image", edit[0], ref_edit.image(pipe)))
    result.append(compare_calls("chat pipeline call", ours.calls(chat), ref_chat.calls(chat)))
    result.append(compare_ids("chat token ids", ours.all("mllm.generate"), ref_chat.all("mllm.generate")))
    official_text = (ref_chat.results(chat) or [{}])[0].get("text")
    result.append(compare_values("chat text", text, official_text, 80))
    if official_text is not None and official_text != official_text.strip():
        session.notes.append(
            "the chat text has outer whitespace: OmniGen2.understand() strips it, inference_chat.py prints it as is"
        )

    session.notes.append(
        f"official commit {session.commit}; device {device}, bfloat16 (inference.py's default --dtype)"
    )
    session.notes.append(
        f"tiny run: {SIZE}x{SIZE} px, {STEPS} steps, seed {SEED} (inference.py's defaults 1024x1024, 50 steps); "
        f"edit input {EDIT_SIZE[0]}x{EDIT_SIZE[1]} px (one input image sets the output size)"
    )
    for what, seconds in session.timings.items():
        session.notes.append(f"{what}: {seconds:.1f} s")
    NOTES[:] = session.notes
    return result


def print_table(rows: list[Check], notes: list[str]) -> None:
    common.print_checks(rows)
    for note in notes:
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", required=True, type=Path, help="checkout of VectorSpaceLab/OmniGen2")
    parser.add_argument(
        "--env", help="model environment, folder or python (default $LMMS_EVAL_UNIFY_MODEL_ENVS/omnigen2)"
    )
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temporary folder)")
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)  # the model environment's half
    options = parser.parse_args(argv)
    if options.build:
        here = Path(__file__).resolve().parent
        sys.path[:] = [str(options.official.resolve())] + [p for p in sys.path if Path(p or ".").resolve() != here]
        build_weights(options.official.resolve(), options.work.resolve() / "weights", WEIGHT_SEED)
        return 0
    work = options.work or Path(tempfile.mkdtemp(prefix="omnigen2_parity_"))
    started = time.perf_counter()
    rows = checks(options.official, work, options.env)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    cpu = children.ru_utime + children.ru_stime + me.ru_utime + me.ru_stime
    total = f"total: {time.perf_counter() - started:.1f} s wall, {cpu:.1f} s CPU (this process and its children)"
    print_table(rows, [*NOTES, total])
    print(common.verdict(MODEL_ID, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
