"""Janus-Pro: our adapter (transformers' ``JanusForConditionalGeneration``) against DeepSeek's own code.

Usage: ``.venv/bin/python bench/parity/janus_pro.py --official DIR [--work DIR] [--env ENV]`` where DIR is a checkout
of github.com/deepseek-ai/Janus (checked at 1daa72f) and ENV the reference environment (a folder or its python;
default ``<work>/env``, made from ``bench/parity/envs/janus_pro.txt`` with
``lmms_eval_unify.generation.environments.create_environment`` and reused while the pins are unchanged). Nothing of
the official code is copied into this repository: it is read and run from DIR. The last line printed is
``janus_pro: k/n identical``.

1. One tiny random checkpoint, seeded, in the official format, built in the reference environment with the
   official classes (``MultiModalityConfig``/``MultiModalityCausalLM``, ``VLChatProcessor``, ``VLMImageProcessor``)
   and a byte-level BPE tokenizer trained in code on the prompts (``LlamaTokenizerFast``, byte-level like
   DeepSeek's, so transformers 5 loads it the way it loads the real one: ``TokenizersBackend``). What the official
   code fixes by name keeps its real size: SigLIP-L (width 1024, 384 px, 576 image tokens; its depth is
   ``select_layer``, 2 here) and the VQ-16 model (72 M parameters, 16,384 codes); the language model is tiny
   (2 layers, width 64). Saved as ``pytorch_model.bin`` in bf16, as published.
2. Converted to the transformers format in our venv as ``convert_janus_weights_to_hf.py`` does (config fields,
   tokenizer and image processor arguments, chat template, generation config), with a key mapping written here
   (that script ships with neither transformers 4.53.3 nor 5.x). Set by hand: the vision depth (from
   ``select_layer``), ``vq_config.num_patches``, ``tie_word_embeddings=False`` (transformers 5's ``JanusConfig``
   defaults to tying, which would replace the official untied ``lm_head`` by the input embeddings) and
   ``generation_kwargs["boi_token_id"]`` (where transformers 5's image loop reads it).
3. The official code runs unmodified in the reference environment through ``ref_run.py`` (written to the work
   folder): ``.cuda()`` is a no-op (CPU; the scripts keep their own ``.to(torch.bfloat16)``), the scripts' Hub
   model id resolves from a private offline Hugging Face cache holding the tiny checkpoint, torch's global
   generator is seeded before the script (the scripts do not seed), and recorders observe, without changing,
   the image preprocessing, the prompt ids fed to the LLM, each ``torch.multinomial`` (row 0's probabilities),
   ``VQModel.decode_code`` and the arrays given to ``PIL.Image.fromarray`` (before the lossy JPEG). The
   repository's ``inference.py``/``generation_inference.py`` are Janus-1.3B's (roles ``User``/``Assistant``); the
   README's Janus-Pro examples are the same calls with roles ``<|User|>``/``<|Assistant|>`` (their
   ``generate()`` is checked to be the script's). The scripts run up to the prompt fed to the LLM (templates,
   preprocessing); the README examples, extracted verbatim into the work folder (the understanding one leaves
   ``question`` and ``image`` to the reader: given as ``inference.py``'s question and image), run whole (token
   ids, pixels: 16 images with full-size VQ decoding, about a minute of CPU). After the generation example the
   same process calls its ``generate()`` once more with ``parallel_size=1`` and the same seed (RNG aligned with
   ours).
4. Our adapter (``JanusPro``, converted folder, CPU, the scripts' dtype bf16) on the same prompts, image and seed,
   observed the same way; then, to measure each cause, with the official pixel tensor substituted, with the
   scripts' ``.to(torch.bfloat16)`` applied to the loaded model, and with a ``DynamicCache`` given to the image
   loop (the official loop's cache).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_COMMON = importlib.util.spec_from_file_location("parity_common", Path(__file__).resolve().with_name("common.py"))
common = sys.modules[_COMMON.name] = importlib.util.module_from_spec(_COMMON)  # loaded by path: see common.py
_COMMON.loader.exec_module(common)
Check = tuple[str, bool, str]

REPO = Path(__file__).resolve().parents[2]
PINS = Path(__file__).resolve().parent / "envs" / "janus_pro.txt"
OFFICIAL_COMMIT = "1daa72fa409002d40931bd7b36a9280362469ead"
SEED = 1234
SCRIPTS = ("inference.py", "generation_inference.py")
README_UNDERSTANDING = "readme_januspro_understanding.py"
README_GENERATION = "readme_januspro_generation.py"
ALIGNED_PARALLEL_SIZE = 1
"""``parallel_size`` of the RNG-aligned call of the official ``generate()`` (the scripts use 16)."""

BOS, EOS, PAD, UNK = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<unk>"
SPECIALS = [
    BOS,
    EOS,
    PAD,
    UNK,
    "<image_placeholder>",
    "<begin_of_image>",
    "<end_of_image>",
    "<|User|>",
    "<|Assistant|>",
]
TINY_LM = dict(
    hidden_size=64,
    intermediate_size=172,
    max_position_embeddings=16384,
    model_type="llama",
    num_attention_heads=4,
    num_hidden_layers=2,
    num_key_value_heads=4,
    torch_dtype="bfloat16",
)
"""The keys of a published Janus-Pro ``language_config`` (the vocabulary size is the tokenizer's)."""
VISION_DEPTH = 2
LM_INIT_STD = 0.08
"""The language model's weights are redrawn with this std (0.02 by default): a random 2-layer model then
depends on its input enough that small differences (pixels, positions) change its greedy tokens."""


def official_spec(official: Path, out: Path, sources: list[Path]) -> dict[str, Any]:
    """What the builder makes: the published Janus-Pro-1B layout with a tiny language model."""
    return {
        "official": str(official),
        "out": str(out),
        "sources": [str(s) for s in sources],
        "specials": SPECIALS,
        "vocab_size": 512,
        "named_tokens": {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "unk_token": UNK},
        "model_max_length": 16384,
        "image_processor": {
            "image_size": 384,
            "min_size": 14,
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            "rescale_factor": 1 / 255,
            "do_normalize": True,
        },
        "processor": {
            "image_tag": "<image_placeholder>",
            "num_image_tokens": 576,
            "add_special_token": False,
            "sft_format": "deepseek",
            "mask_prompt": True,
            "ignore_id": -100,
        },
        "seed": 0,
        "lm_init_std": LM_INIT_STD,
        "dtype": "bfloat16",
        "config": {
            "vision_config": {
                "cls": "CLIPVisionTower",
                "model_type": "vision",
                "params": {
                    "image_size": 384,
                    "model_name": "siglip_large_patch16_384",
                    "select_feature": "same",
                    "select_layer": VISION_DEPTH,
                },
            },
            "aligner_config": {
                "cls": "MlpProjector",
                "model_type": "aligner",
                "params": {"depth": 2, "input_dim": 1024, "n_embed": 64, "projector_type": "mlp_gelu"},
            },
            "gen_vision_config": {
                "cls": "VQ-16",
                "model_type": "gen_vision",
                "params": {"image_token_size": 16384, "n_embed": 8},
            },
            "gen_aligner_config": {
                "cls": "MlpProjector",
                "model_type": "gen_aligner",
                "params": {"depth": 2, "input_dim": 8, "n_embed": 64, "projector_type": "mlp_gelu"},
            },
            "gen_head_config": {
                "cls": "vision_head",
                "model_type": "gen_head",
                "params": {"image_token_embed": 64, "image_token_size": 16384, "n_embed": 64},
            },
            "language_config": TINY_LM,
        },
    }


# ---------------------------------------------------------------------------------------------------------------
# Scripts run in the reference environment (written to the work folder)
# ---------------------------------------------------------------------------------------------------------------

BUILD_SCRIPT = r'''"""Reference environment: a tiny random Janus-Pro checkpoint, official format and classes."""
import ast, json, re, sys
from pathlib import Path

import torch

spec = json.loads(Path(sys.argv[1]).read_text())
out = Path(spec["out"])
out.mkdir(parents=True, exist_ok=True)
import janus  # noqa: F401  (the package's own collections patch, which attrdict needs on Python >= 3.10)
from janus.models import MultiModalityCausalLM, VLChatProcessor, VLMImageProcessor
from janus.models.modeling_vlm import MultiModalityConfig
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaTokenizerFast

# A byte-level BPE, as DeepSeek's tokenizer is (ByteLevel pre-tokenizer and decoder, BOS added by
# LlamaTokenizerFast), trained in code on every string constant of the official sources that are run and on the
# processor's system prompt; the specials come first.
texts = [VLChatProcessor.system_prompt]
for source in spec["sources"]:
    tree = ast.parse(Path(source).read_text())
    texts += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
backend = Tokenizer(models.BPE())
backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
backend.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=spec["vocab_size"],
    special_tokens=spec["specials"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
backend.train_from_iterator(texts, trainer)
vocab = backend.get_vocab()
named = spec["named_tokens"]
tokenizer = LlamaTokenizerFast(
    tokenizer_object=backend,
    add_bos_token=True,
    add_eos_token=False,
    legacy=False,
    additional_special_tokens=[s for s in spec["specials"] if s not in named.values()],
    model_max_length=spec["model_max_length"],
    **named,
)
processor = VLChatProcessor(
    image_processor=VLMImageProcessor(**spec["image_processor"]), tokenizer=tokenizer, **spec["processor"]
)
processor.save_pretrained(out)

config = dict(spec["config"])
config["language_config"] = dict(config["language_config"], vocab_size=len(vocab))
torch.manual_seed(spec["seed"])
model = MultiModalityCausalLM(MultiModalityConfig(**config)).eval()
with torch.no_grad():
    for name, weight in model.language_model.named_parameters():
        if weight.dim() == 2:
            weight.normal_(0.0, spec["lm_init_std"])
    model.language_model.lm_head.weight[: len(spec["specials"])] = 0  # greedy decoding says text
dtype = getattr(torch, spec["dtype"])
state = {k: v.to(dtype).contiguous() for k, v in model.state_dict().items()}
torch.save(state, out / "pytorch_model.bin")
config.update(architectures=["MultiModalityCausalLM"], model_type="multi_modality", torch_dtype=spec["dtype"])
(out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
print(json.dumps({"parameters": sum(v.numel() for v in state.values()), "keys": len(state), "vocabulary": len(vocab)}))
'''

REF_SCRIPT = r'''"""Reference environment: one official script, unmodified, on the CPU, observed.

.cuda() of modules and tensors returns them unchanged (the scripts hard-code CUDA); torch's global generator is
seeded right before the script (the scripts do not seed); recorders observe, and never change, the official
calls. The script's Hub model id resolves from the offline Hugging Face cache the bench prepared.
"""
import argparse, json, sys, time
from pathlib import Path

import PIL.Image
import torch

parser = argparse.ArgumentParser()
parser.add_argument("script")
parser.add_argument("out")
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--globals", default="{}", help="JSON: names the script uses but does not define (README)")
parser.add_argument("--stop-at-llm", action="store_true", help="stop once the prompt ids reach the LLM")
parser.add_argument("--aligned", type=int, default=0, help="then call generate() with this parallel_size")
args = parser.parse_args()

torch.nn.Module.cuda = lambda self, device=None: self
torch.Tensor.cuda = lambda self, *a, **k: self

import janus  # noqa: F401
from janus.models import VLChatProcessor, VLMImageProcessor
from janus.models.vq_model import VQModel

runs = {"script": {}}
current = runs["script"]


class StopAtLLM(Exception):
    pass


def record(name, value):
    current.setdefault(name, []).append(value)


_preprocess = VLMImageProcessor.preprocess
def preprocess(self, images, return_tensors="pt", **kwargs):
    output = _preprocess(self, images, return_tensors=return_tensors, **kwargs)
    record("pixel_values", output["pixel_values"].detach().clone())
    return output
VLMImageProcessor.preprocess = preprocess

_sft = VLChatProcessor.apply_sft_template_for_multi_turn_prompts
def sft(self, *a, **k):
    text = _sft(self, *a, **k)
    record("sft_calls", text)
    return text
VLChatProcessor.apply_sft_template_for_multi_turn_prompts = sft

_embedding = torch.nn.Embedding.forward
def embedding(self, ids):
    if ids.dim() == 2 and ids.shape[1] > 1:  # a whole prompt (decoding steps feed one token per row)
        record("llm_input_ids", ids.detach().clone().long())
        if args.stop_at_llm:
            raise StopAtLLM
    return _embedding(self, ids)
torch.nn.Embedding.forward = embedding

_multinomial = torch.multinomial
def multinomial(probs, num_samples, *a, **k):
    tokens = _multinomial(probs, num_samples, *a, **k)
    record("probs_row0", probs[0].detach().float().clone())
    return tokens
torch.multinomial = multinomial

_decode_code = VQModel.decode_code
def decode_code(self, code_b, shape=None, channel_first=True):
    dec = _decode_code(self, code_b, shape, channel_first)
    record("codes", code_b.detach().clone().long())
    record("decoded", dec.detach().float().clone())
    return dec
VQModel.decode_code = decode_code

_fromarray = PIL.Image.fromarray
def fromarray(array, *a, **k):
    record("saved_arrays", torch.from_numpy(array.copy()))
    return _fromarray(array, *a, **k)
PIL.Image.fromarray = fromarray

path = Path(args.script).resolve()
g = {"__name__": "__main__", "__file__": str(path), "__builtins__": __builtins__, **json.loads(args.globals)}
sys.argv = [str(path)]
torch.manual_seed(args.seed)
start = time.process_time()
try:
    exec(compile(path.read_text(), str(path), "exec"), g)
except StopAtLLM:
    current["stopped_at_llm"] = True
current["cpu_s"] = time.process_time() - start
model = g["vl_gpt"]
current["dtype"] = str(next(model.parameters()).dtype)
current["inv_freq"] = model.language_model.model.rotary_emb.inv_freq.detach().clone()
current["model_path"] = g["model_path"]
current["content"] = g["conversation"][0]["content"]
current["roles"] = [m["role"] for m in g["conversation"]]
if "prepare_inputs" in g:  # understanding
    current["sft_format"] = g["prepare_inputs"]["sft_format"][0]
    current["images"] = [str(Path(p).resolve()) for p in g["conversation"][0].get("images", [])]
if "outputs" in g:
    current["generated_ids"] = g["outputs"][0].detach().clone().long()
    current["answer"] = g["answer"]
if "prompt" in g:  # generation
    current["sft_format"] = g["sft_format"]
    current["prompt"] = g["prompt"]
    if args.aligned:
        # RNG-aligned: the script's own generate(), parallel_size images instead of 16, the same seed
        runs["aligned"] = current = {}
        torch.manual_seed(args.seed)
        start = time.process_time()
        g["generate"](model, g["vl_chat_processor"], g["prompt"], parallel_size=args.aligned)
        current["cpu_s"] = time.process_time() - start
torch.save(runs, args.out)
'''

# ---------------------------------------------------------------------------------------------------------------
# Conversion to the transformers format (what convert_janus_weights_to_hf.py does; key mapping written here)
# ---------------------------------------------------------------------------------------------------------------

CHAT_TEMPLATE = (
    "{%set seps=['\n\n','<\uff5cend\u2581of\u2581sentence\uff5c>']%}"
    "{%set i=0%}"
    "{%for message in messages%}"
    "{%if message['role']|lower=='user'%}"
    "<|User|>: "
    "{%elif message['role']|lower=='assistant'%}"
    "<|Assistant|>:{%if not (loop.last and not add_generation_prompt and message['content'][0]['type']=='text' "
    "and message['content'][0]['text']=='')%} {%endif%}"
    "{%else%}"
    "{{message['role'].capitalize()}}: "
    "{%endif%}"
    "{%for content in message['content']%}"
    "{%if content['type']=='image'%}"
    "{%if not loop.first%}{{'\n'}}{%endif%}"
    "<image_placeholder>"
    "{%if not loop.last%}{{'\n'}}{%endif%}"
    "{%elif content['type']=='text'%}"
    "{%set text=content['text']%}"
    "{%if loop.first%}{%set text=text.lstrip()%}{%endif%}"
    "{%if loop.last%}{%set text=text.rstrip()%}{%endif%}"
    "{%if not loop.first and message['content'][loop.index0-1]['type']=='text'%}"
    "{{' '+text}}"
    "{%else%}"
    "{{text}}"
    "{%endif%}"
    "{%endif%}"
    "{%endfor%}"
    "{%if not loop.last or add_generation_prompt%}"
    "{%if message['role']|lower=='user'%}"
    "{{seps[0]}}"
    "{%else%}"
    "{{seps[1]}}"
    "{%endif%}"
    "{%endif%}"
    "{%endfor%}"
    "{%if add_generation_prompt%}<|Assistant|>:{%endif%}"
)
"""The chat template ``convert_janus_weights_to_hf.py`` (huggingface/transformers) gives converted checkpoints."""

KEY_RULES: list[tuple[str, str | None]] = [
    # dropped: the SigLIP attention-pooling head (the official tower ignores it) and the VQ usage counter
    (r"^vision_model\.vision_tower\.attn_pool\..*", None),
    (r"^gen_vision_model\.quantize\.codebook_used$", None),
    # understanding encoder
    (r"^vision_model\.vision_tower\.pos_embed$", "model.vision_model.embeddings.position_embedding.weight"),
    (r"^vision_model\.vision_tower\.patch_embed\.proj\.", "model.vision_model.embeddings.patch_embedding."),
    (
        r"^vision_model\.vision_tower\.blocks\.(\d+)\.attn\.qkv\.",
        r"model.vision_model.encoder.layers.\1.self_attn.qkv.",
    ),
    (
        r"^vision_model\.vision_tower\.blocks\.(\d+)\.attn\.proj\.",
        r"model.vision_model.encoder.layers.\1.self_attn.projection_layer.",
    ),
    (
        r"^vision_model\.vision_tower\.blocks\.(\d+)\.norm([12])\.",
        r"model.vision_model.encoder.layers.\1.layer_norm\2.",
    ),
    (r"^vision_model\.vision_tower\.blocks\.(\d+)\.mlp\.", r"model.vision_model.encoder.layers.\1.mlp."),
    (r"^vision_model\.vision_tower\.norm\.", "model.vision_model.post_layernorm."),
    # aligners: MlpProjector's Sequential(Linear, GELU, Linear, ...) -> fc1, hidden_layers.0, ...
    (r"^aligner\.layers\.0\.", "model.aligner.fc1."),
    (r"^aligner\.layers\.2\.", "model.aligner.hidden_layers.0."),
    (r"^gen_aligner\.layers\.0\.", "model.generation_aligner.fc1."),
    (r"^gen_aligner\.layers\.2\.", "model.generation_aligner.hidden_layers.0."),
    # generation head and embeddings
    (r"^gen_head\.output_mlp_projector\.", "model.generation_head.proj_out."),
    (r"^gen_head\.vision_head\.", "model.generation_head.vision_head."),
    (r"^gen_embed\.", "model.generation_embeddings."),
    # language model
    (r"^language_model\.model\.", "model.language_model."),
    (r"^language_model\.lm_head\.", "lm_head."),
]
VQ_RULES = [
    (r"^gen_vision_model\.", "model.vqmodel."),
    (r"\.encoder\.conv_blocks\.", ".encoder.down."),
    (r"\.decoder\.conv_blocks\.", ".decoder.up."),
    (r"\.res\.", ".block."),
    (r"\.mid\.0\.", ".mid.block_1."),
    (r"\.mid\.1\.", ".mid.attn_1."),
    (r"\.mid\.2\.", ".mid.block_2."),
]


def convert_key(key: str) -> str | None:
    """The transformers name of an official parameter (``None``: not part of the transformers model)."""
    if key.startswith("gen_vision_model.") and not key.endswith("codebook_used"):
        for pattern, repl in VQ_RULES:
            key = re.sub(pattern, repl, key)
        return key
    for pattern, repl in KEY_RULES:
        if re.search(pattern, key):
            return None if repl is None else re.sub(pattern, repl, key)
    raise KeyError(f"no conversion rule for {key}")


def convert_state_dict(state: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The converted state dict and the official keys it leaves out."""
    converted, dropped = {}, []
    for key, tensor in state.items():
        new = convert_key(key)
        if new is None:
            dropped.append(key)
        elif ".qkv." in new:
            for part, name in zip(tensor.chunk(3, dim=0), ("q_proj", "k_proj", "v_proj"), strict=True):
                converted[new.replace(".qkv.", f".{name}.")] = part.contiguous()
        elif new.endswith("position_embedding.weight"):
            converted[new] = tensor.squeeze(0)
        else:
            converted[new] = tensor
    return converted, dropped


def convert_checkpoint(official_ckpt: Path, out: Path) -> dict[str, Any]:
    """The official-format folder as a transformers Janus folder (what our adapter loads); a report."""
    import torch
    from transformers import (
        AutoTokenizer,
        JanusConfig,
        JanusForConditionalGeneration,
        JanusVisionConfig,
        JanusVQVAEConfig,
        LlamaConfig,
    )
    from transformers.models.janus.image_processing_janus import JanusImageProcessor
    from transformers.models.janus.processing_janus import JanusProcessor

    config = json.loads((official_ckpt / "config.json").read_text())
    preprocessor = json.loads((official_ckpt / "preprocessor_config.json").read_text())
    tokenizer_config = json.loads((official_ckpt / "tokenizer_config.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(
        official_ckpt,
        model_max_length=tokenizer_config["model_max_length"],
        extra_special_tokens={
            "image_token": "<image_placeholder>",
            "boi_token": "<begin_of_image>",
            "eoi_token": "<end_of_image>",
        },
    )
    image_kwargs = {
        k: preprocessor[k]
        for k in ("do_normalize", "image_mean", "image_std", "min_size", "rescale_factor")
        if k in preprocessor
    }
    image_kwargs["size"] = {"height": preprocessor["image_size"], "width": preprocessor["image_size"]}
    processor = JanusProcessor(
        image_processor=JanusImageProcessor(**image_kwargs),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
        use_default_system_prompt=True,
    )
    language = config["language_config"]
    keys = (
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "hidden_act",
        "max_position_embeddings",
        "torch_dtype",
    )
    text_config = LlamaConfig(
        **{k: language[k] for k in keys if k in language and k != "torch_dtype"},
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    vision_params = config["vision_config"]["params"]
    aligner = config["aligner_config"]["params"]
    vision_config = JanusVisionConfig(
        image_size=vision_params["image_size"],
        projection_dim=aligner["n_embed"],
        depth=aligner["depth"],
        num_hidden_layers=vision_params["select_layer"],  # by hand: the official depth is select_layer
    )
    gen_vision, gen_aligner, gen_head = (
        config[k]["params"] for k in ("gen_vision_config", "gen_aligner_config", "gen_head_config")
    )
    vq_config = JanusVQVAEConfig(
        embed_dim=gen_vision["n_embed"],
        num_embeddings=gen_vision["image_token_size"],
        projection_dim=gen_aligner["n_embed"],
        depth=gen_aligner["depth"],
        image_token_embed_dim=gen_head["image_token_embed"],
        num_patches=vision_params["image_size"] // 16,  # by hand (the VQ grid: 384 px / 16)
    )
    janus_config = JanusConfig(
        text_config=text_config,
        vision_config=vision_config,
        vq_config=vq_config,
        image_token_id=tokenizer.vocab.get("<image_placeholder>"),
        tie_word_embeddings=False,  # by hand: the official lm_head is its own weight
    )
    with torch.device("meta"):
        model = JanusForConditionalGeneration(janus_config)
    model.generation_config._from_model_config = False
    model.generation_config.temperature = 1
    model.generation_config.guidance_scale = 5
    model.generation_config.pad_token_id = tokenizer.vocab.get(PAD)
    model.generation_config.generation_kwargs = {"boi_token_id": tokenizer.vocab.get("<begin_of_image>")}
    state = torch.load(official_ckpt / "pytorch_model.bin", map_location="cpu")
    converted, dropped = convert_state_dict(state)
    result = model.load_state_dict(converted, strict=True, assign=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return {
        "official_keys": len(state),
        "dropped": dropped,
        "converted_keys": len(converted),
        "model_keys": len(model.state_dict()),
        "missing": list(result.missing_keys),
        "unexpected": list(result.unexpected_keys),
    }


# ---------------------------------------------------------------------------------------------------------------
# Work folder: environment, sources, checkpoints, offline Hub cache
# ---------------------------------------------------------------------------------------------------------------


def _sha(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
    return digest.hexdigest()


def reference_python(work: Path, env: str | None) -> Path:
    """The reference environment's interpreter: ``env`` (folder or python), else ``<work>/env`` (made once)."""
    from lmms_eval_unify.generation.environments import create_environment
    from lmms_eval_unify.generation.worker import ENVIRONMENT_MARKER

    if env:
        path = Path(env).expanduser()
        return path if path.is_file() else path / "bin" / "python"
    target = (work / "env").resolve()
    marker = target / ENVIRONMENT_MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("pins_sha256") == _sha(PINS.read_bytes()):
        return target / "bin" / "python"
    print(f"creating the reference environment in {target} from {PINS} ...", file=sys.stderr)
    return create_environment("janus_pro", target, PINS)


def official_commit(official: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(official), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def readme_examples(official: Path, work: Path) -> tuple[Path, Path]:
    """The README's Janus-Pro understanding and text-to-image examples, verbatim, as files in ``work``."""
    blocks = [b for b in python_blocks((official / "README.md").read_text()) if '"deepseek-ai/Janus-Pro' in b]
    understanding = [b for b in blocks if "prepare_inputs_embeds" in b]
    generation = [b for b in blocks if "def generate(" in b]
    if len(understanding) != 1 or len(generation) != 1:
        raise SystemExit("README.md: expected one Janus-Pro understanding and one text-to-image example")
    paths = work / README_UNDERSTANDING, work / README_GENERATION
    for path, block in zip(paths, (understanding[0], generation[0]), strict=True):
        if not path.is_file() or path.read_text() != block:
            path.write_text(block)
    return paths


def same_function(a: Path, b: Path, name: str) -> bool:
    """Whether two files define ``name`` with the same code (ASTs compared)."""

    def find(path: Path) -> str:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return ast.dump(node, include_attributes=False)
        return ""

    return bool(find(a)) and find(a) == find(b)


def model_paths(sources: list[Path]) -> set[str]:
    return {m for s in sources for m in re.findall(r'model_path\s*=\s*"([^"]+)"', s.read_text())}


def hub_cache(work: Path, checkpoint: Path, repo_ids: set[str]) -> Path:
    """An offline Hugging Face cache where each of ``repo_ids`` is the tiny checkpoint."""
    cache = work / "hub"
    revision = "0" * 40
    for repo_id in repo_ids:
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        snapshot = repo / "snapshots" / revision
        if snapshot.exists():
            shutil.rmtree(snapshot)
        snapshot.mkdir(parents=True)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(revision)
        for file in checkpoint.iterdir():
            (snapshot / file.name).symlink_to(file.resolve())
    return cache


def build_official(python: Path, official: Path, work: Path, sources: list[Path]) -> tuple[Path, str]:
    """The tiny official checkpoint (rebuilt when the builder, its spec or the sources change)."""
    out = work / "official_ckpt"
    spec = official_spec(official, out, sources)
    stamp = _sha(BUILD_SCRIPT, json.dumps(spec, sort_keys=True), *[s.read_text() for s in sources])
    if (out / ".stamp").is_file() and (out / ".stamp").read_text() == stamp:
        return out, "reused"
    if out.exists():
        shutil.rmtree(out)
    (work / "build_official.py").write_text(BUILD_SCRIPT)
    (work / "build_spec.json").write_text(json.dumps(spec, indent=1))
    result = run_reference(python, official, work, [str(work / "build_official.py"), str(work / "build_spec.json")])
    (out / ".stamp").write_text(stamp)
    return out, result.stdout.strip().splitlines()[-1]


def run_reference(
    python: Path, official: Path, work: Path, argv: list[str], cache: Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(official.resolve()), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["HF_HUB_CACHE"] = str((cache or work / "hub").resolve())
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see __main__
    env.pop("HF_HOME", None)
    result = subprocess.run([str(python), *argv], cwd=cwd or work, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"reference run {argv} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


# ---------------------------------------------------------------------------------------------------------------
# Our side: the adapter, observed
# ---------------------------------------------------------------------------------------------------------------


class RecordingProcessor:
    """Stands in for the adapter's processor: every call is delegated and its output kept; with
    ``pixel_values`` set, the processor's pixel tensor is replaced by it (the official one, for diagnosis)."""

    def __init__(self, processor: Any, pixel_values: Any = None) -> None:
        self._processor = processor
        self._pixel_values = pixel_values
        self.calls: list[tuple[dict[str, Any], Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        output = self._processor(*args, **kwargs)
        self.calls.append((kwargs, {k: v.clone() for k, v in output.items()}))
        if self._pixel_values is not None and "pixel_values" in output:
            output["pixel_values"] = self._pixel_values.clone()
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self._processor, name)


@contextmanager
def recording_embeddings(sink: list, module: Any) -> Iterator[None]:
    """Records every whole-prompt lookup of ``module`` (the LLM's input embeddings), as the reference does."""
    import torch

    original = torch.nn.Embedding.forward

    def forward(self: Any, ids: Any) -> Any:
        if self is module and ids.dim() == 2 and ids.shape[1] > 1:
            sink.append(ids.detach().clone().long())
        return original(self, ids)

    torch.nn.Embedding.forward = forward
    try:
        yield
    finally:
        torch.nn.Embedding.forward = original


def recording_sampler(base: type, probs: list, forced: Any = None) -> type:
    """``SeededRowSampler`` observed as the reference is: the probabilities row 0 gives ``torch.multinomial`` are
    kept at each step; given ``forced`` (1-D token ids), that token is kept instead of the sampler's draw."""
    import torch

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.step = 0

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            original, seen = torch.multinomial, []

            def multinomial(p: Any, *args: Any, **kwargs: Any) -> Any:
                if not seen:
                    seen.append(p[0].detach().float().clone())
                return original(p, *args, **kwargs)

            torch.multinomial = multinomial
            try:
                output = super().__call__(input_ids, scores)
            finally:
                torch.multinomial = original
            probs.append(seen[0])
            if forced is not None:
                output = torch.full_like(output, float("-inf"))
                output[:, int(forced[self.step])] = 0.0
            self.step += 1
            return output

    return Recording


def run_ours(
    adapter: Any,
    image_path: Path,
    question: str,
    gen_prompt: str,
    seed: int,
    forced: Any,
    pixel_values: Any = None,
    dynamic_cache: bool = False,
    understanding: bool = True,
    generation: bool = True,
) -> dict[str, Any]:
    """Our adapter's ``understand`` and ``generate_image`` (own draw, then ``forced`` tokens), observed. For
    diagnosis: ``pixel_values`` replaces the processor's pixel tensor; ``dynamic_cache`` gives the image
    ``generate`` a fresh ``DynamicCache`` (the official loop's cache) as its ``cache``."""
    import numpy
    import torch
    from lmms_eval_unify.model_adapters import janus_pro as module
    from PIL import Image

    original_processor = adapter.processor
    processor = RecordingProcessor(original_processor, pixel_values)
    adapter.processor = processor
    model = adapter.model
    generated: list = []
    decoded: list = []
    generate, decode = model.generate, model.decode_image_tokens

    def generate_recorded(*args: Any, **kwargs: Any) -> Any:
        if dynamic_cache and kwargs.get("generation_mode") == "image":
            from transformers import DynamicCache

            kwargs["cache"] = DynamicCache(config=model.config.get_text_config())
        output = generate(*args, **kwargs)
        generated.append(output.detach().clone())
        return output

    def decode_recorded(*args: Any, **kwargs: Any) -> Any:
        output = decode(*args, **kwargs)
        decoded.append(output.detach().float().clone())
        return output

    model.generate, model.decode_image_tokens = generate_recorded, decode_recorded
    embeddings = model.get_input_embeddings()
    rotary = model.model.language_model.rotary_emb.inv_freq
    out: dict[str, Any] = {"dtype": str(model.dtype), "inv_freq": rotary.detach().clone()}
    image = Image.open(image_path).convert("RGB")
    sampler = module.SeededRowSampler
    try:
        prompts: list = []
        if understanding:
            with recording_embeddings(prompts, embeddings):
                out["understanding_prompt"] = adapter._prompt([image], question)
                out["answer"] = adapter.understand([image], question, max_new_tokens=512, seed=seed)
            prompt_length = processor.calls[-1][1]["input_ids"].shape[1]
            out["understanding_inputs"] = processor.calls[-1][1]
            out["understanding_llm_ids"] = prompts[0]
            out["generated_ids"] = generated[-1][0, prompt_length:]
        for name, forced_tokens in (("generation", None), ("forced", forced)) if generation else ():
            probs: list = []
            prompts = []
            module.SeededRowSampler = recording_sampler(sampler, probs, forced_tokens)
            with recording_embeddings(prompts, embeddings):
                pil = adapter.generate_image(gen_prompt, [], seed=seed)
            module.SeededRowSampler = sampler
            out[name] = {
                "prompt": adapter._prompt([], gen_prompt),
                "llm_ids": prompts[0],
                "tokens": generated[-1][0].long(),
                "probs_row0": torch.stack(probs),
                "decoded": decoded[-1][0],
                "pixels": torch.from_numpy(numpy.asarray(pil).copy()),
            }
    finally:
        module.SeededRowSampler = sampler
        adapter.processor = original_processor
        del model.generate, model.decode_image_tokens
    return out


# ---------------------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------------------


def _short(text: str, limit: int = 90) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 20] + " ... " + text[-15:]


def _compare_sequences(name: str, official: Any, ours: Any, equal: str, unequal: Callable[[int], str]) -> Check:
    """``equal`` where the sequences are equal, else ``unequal(first differing index)``."""
    if official == ours:
        return name, True, equal
    return name, False, unequal(common.first_difference(official, ours))


def compare_text(name: str, official: str, ours: str) -> Check:
    def unequal(at: int) -> str:
        return (
            f"differ at char {at}: official {_short(official[max(0, at - 12) : at + 28])} "
            f"vs ours {_short(ours[max(0, at - 12) : at + 28])}"
        )

    return _compare_sequences(name, official, ours, f"equal: {_short(ours)}", unequal)


def compare_ids(name: str, official: Any, ours: Any, what: str = "ids") -> Check:
    official, ours = official.flatten().tolist(), ours.flatten().tolist()

    def unequal(at: int) -> str:
        same = sum(a == b for a, b in zip(official, ours, strict=False))
        return (
            f"{len(official)} vs {len(ours)} {what}, {same} positions equal, first difference at {at} "
            f"(official {official[at : at + 3]} vs ours {ours[at : at + 3]})"
        )

    return _compare_sequences(name, official, ours, f"{len(ours)} {what} equal", unequal)


def compare_tensor(name: str, official: Any, ours: Any, unit: str = "") -> tuple[str, bool, str]:
    official, ours = official.float(), ours.float()
    if official.shape != ours.shape:
        return name, False, f"shapes {tuple(official.shape)} vs {tuple(ours.shape)}"
    diff = (official - ours).abs()
    if bool((diff == 0).all()):
        return name, True, f"{tuple(ours.shape)} bitwise equal"
    return (
        name,
        False,
        (
            f"max |diff| {diff.max().item():.3g}{unit}, mean {diff.mean().item():.2g}{unit}, "
            f"{int((diff > 0).sum())}/{diff.numel()} values differ"
        ),
    )


def _with(result: tuple[str, bool, str], cause: str) -> tuple[str, bool, str]:
    """Appends the measured cause to the detail of a check that is not identical."""
    name, same, detail = result
    return (name, same, detail if same else f"{detail}; {cause}")


def content_rows(pixels: Any) -> tuple[int, int]:
    """First and last row of a padded (3, H, W) tensor that are not all padding (the top-left pixel)."""
    import torch

    rows = torch.nonzero((pixels != pixels[:, :1, :1]).any(dim=0).any(dim=1)).flatten()
    return int(rows.min()), int(rows.max())


def truncated_uint8(decoded: Any) -> Any:
    """The official script's conversion (``np.clip((x + 1) / 2 * 255, 0, 255)`` stored into ``uint8``: truncated)."""
    import torch

    return ((decoded.float() + 1) / 2 * 255).clamp(0, 255).to(torch.uint8)


def official_resize(image_path: Path, side: int, background: Any) -> Any:
    """The image resized and padded as the official ``VLMImageProcessor`` does (longest side ``side``, the other
    ``int()``-truncated, min 14, PIL bicubic, centred on a square of ``background``), for the preprocessing fix
    check: given this, our processor's own resize and pad change nothing."""
    from PIL import Image

    image = Image.open(image_path).convert("RGB")
    width, height = image.size
    longest = max(width, height)
    size = (max(int(width / longest * side), 14), max(int(height / longest * side), 14))
    resized = image.resize(size, Image.BICUBIC)
    square = Image.new("RGB", (side, side), tuple(int(c) for c in background))
    square.paste(resized, ((side - size[0]) // 2, (side - size[1]) // 2))
    return square


LAST_RUN: dict[str, Any] = {}
"""What the last :func:`checks` call measured besides its table (timings, paths, the official commit)."""


def checks(official: Path, work: Path, env: str | None) -> list[tuple[str, bool, str]]:
    """Every comparison: (check, identical?, detail)."""
    import torch

    official, work = Path(official).resolve(), Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    LAST_RUN.clear()
    LAST_RUN.update(commit=official_commit(official), timings=timings)
    t = time.time()
    python = reference_python(work, env)
    timings["environment"] = time.time() - t
    results: list[tuple[str, bool, str]] = []

    understanding_readme, generation_readme = readme_examples(official, work)
    sources = [*(official / s for s in SCRIPTS), understanding_readme, generation_readme]
    same_generate = same_function(official / "generation_inference.py", generation_readme, "generate")
    results.append(
        (
            "README Janus-Pro example's generate() is generation_inference.py's",
            same_generate,
            "same AST (the example differs from the script in model_path, roles and prompt only)"
            if same_generate
            else "the two generate() functions differ",
        )
    )

    t = time.time()
    checkpoint, built = build_official(python, official, work, sources)
    timings["official checkpoint"] = time.time() - t
    t = time.time()
    hf = work / "hf_ckpt"
    report_file = hf / "conversion.json"
    stamp = _sha((checkpoint / ".stamp").read_text(), json.dumps(KEY_RULES), json.dumps(VQ_RULES), CHAT_TEMPLATE)
    if (hf / ".stamp").is_file() and (hf / ".stamp").read_text() == stamp and report_file.is_file():
        report = json.loads(report_file.read_text())
    else:
        if hf.exists():
            shutil.rmtree(hf)
        report = convert_checkpoint(checkpoint, hf)
        report_file.write_text(json.dumps(report, indent=1))
        (hf / ".stamp").write_text(stamp)
    timings["conversion"] = time.time() - t
    LAST_RUN.update(python=str(python), checkpoint=f"{checkpoint} ({built})", converted=str(hf))
    results.append(
        (
            "conversion: every official weight loads (strict)",
            not report["missing"] and not report["unexpected"] and report["converted_keys"] == report["model_keys"],
            f"{report['official_keys']} official keys, {len(report['dropped'])} dropped (SigLIP attn_pool head, "
            f"VQ codebook_used), {report['converted_keys']} converted = {report['model_keys']} model keys, "
            f"missing {report['missing'][:3]}, unexpected {report['unexpected'][:3]}",
        )
    )

    cache = hub_cache(work, checkpoint, model_paths(sources))
    cwd = work / "ref_cwd"
    (cwd / "images").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(official / "images" / "equation.png", cwd / "images" / "equation.png")
    (work / "ref_run.py").write_text(REF_SCRIPT)

    def reference(name: str, script: Path, *extra: str) -> dict[str, Any]:
        t = time.time()
        out = work / f"ref_{name}.pt"
        argv = [str(work / "ref_run.py"), str(script), str(out), "--seed", str(SEED), *extra]
        run_reference(python, official, work, argv, cache, cwd)
        timings[f"reference {name}"] = time.time() - t
        return torch.load(out, weights_only=True)

    ref_und_script = reference("inference", official / "inference.py", "--stop-at-llm")["script"]
    question = ref_und_script["content"].removeprefix("<image_placeholder>").lstrip("\n")
    image_path = Path(ref_und_script["images"][0])
    readme_globals = json.dumps({"question": question, "image": os.path.relpath(image_path, cwd)})
    ref_gen_script = reference("generation_inference", official / "generation_inference.py", "--stop-at-llm")["script"]
    ref_und = reference("readme_understanding", understanding_readme, "--globals", readme_globals)["script"]
    runs = reference("readme_generation", generation_readme, "--aligned", str(ALIGNED_PARALLEL_SIZE))
    ref_gen, ref_aligned = runs["script"], runs["aligned"]

    # ours: the adapter as it runs (dtype: the scripts'), then aligned with the official run for diagnosis
    from lmms_eval_unify.model_adapters.janus_pro import JanusPro

    dtype = ref_und["dtype"].removeprefix("torch.")
    forced = ref_gen["codes"][0][0]
    official_pixels = ref_und_script["pixel_values"][0]
    t = time.time()
    adapter = JanusPro(pretrained=str(hf), device="cpu", dtype=dtype)
    ours = run_ours(adapter, image_path, question, ref_gen["content"], SEED, forced)
    timings["ours"] = time.time() - t
    t = time.time()
    # diagnosis, one cause at a time: the official pixel tensor; the scripts' vl_gpt.to(torch.bfloat16), which
    # casts buffers too; both ("aligned"); then the official loop's DynamicCache in the image loop
    only_pixels = run_ours(adapter, image_path, question, "", SEED, None, official_pixels, generation=False)
    adapter.model.to(getattr(torch, dtype))
    only_cast = run_ours(adapter, image_path, question, "", SEED, None, generation=False)
    aligned = run_ours(adapter, image_path, question, ref_gen["content"], SEED, forced, official_pixels)
    timings["ours, aligned"] = time.time() - t
    t = time.time()
    dynamic = run_ours(
        adapter, image_path, question, ref_gen["content"], SEED, forced, dynamic_cache=True, understanding=False
    )
    timings["ours, aligned + DynamicCache"] = time.time() - t

    # --- prompts and the ids fed to the LLM ---------------------------------------------------------------------
    from transformers.models.janus.processing_janus import DEFAULT_SYSTEM_PROMPT

    ours_und = DEFAULT_SYSTEM_PROMPT + ours["understanding_prompt"]  # the processor prefixes it in text mode
    role_cause = "the repository scripts are Janus-1.3B's (roles User/Assistant); Janus-Pro's README uses <|User|>"
    results.append(
        _with(
            compare_text(
                f"understanding prompt: inference.py ({'/'.join(ref_und_script['roles'])}) vs ours",
                ref_und_script["sft_format"],
                ours_und,
            ),
            role_cause,
        )
    )
    results.append(
        compare_text(
            f"understanding prompt: README Janus-Pro ({'/'.join(ref_und['roles'])}) vs ours",
            ref_und["sft_format"],
            ours_und,
        )
    )
    results.append(
        compare_ids(
            "understanding: prompt ids fed to the LLM (README)",
            ref_und["llm_input_ids"][0],
            ours["understanding_llm_ids"],
        )
    )
    ours_gen = ours["generation"]["prompt"] + "<begin_of_image>"  # the processor appends it in image mode
    results.append(
        _with(
            compare_text(
                f"generation prompt: generation_inference.py ({'/'.join(ref_gen_script['roles'])}) vs ours",
                ref_gen_script["prompt"],
                ours_gen,
            ),
            role_cause + "; the prompt texts differ too (ours: README's)",
        )
    )
    results.append(
        compare_text(
            f"generation prompt: README Janus-Pro ({'/'.join(ref_gen['roles'])}) vs ours", ref_gen["prompt"], ours_gen
        )
    )
    results.append(
        compare_ids(
            "generation: prompt ids fed to the LLM, conditional + CFG rows (README)",
            ref_gen["llm_input_ids"][0][:2],
            ours["generation"]["llm_ids"],
        )
    )

    # --- image preprocessing and precision ----------------------------------------------------------------------
    from PIL import Image

    ours_pixels = ours["understanding_inputs"]["pixel_values"][0]
    (o0, o1), (u0, u1) = content_rows(official_pixels[0]), content_rows(ours_pixels)
    with Image.open(image_path) as img:
        width, height = img.size
    side = official_pixels.shape[-1]
    pixel_row = _with(
        compare_tensor(
            f"image preprocessing: {image_path.name} {width}x{height} -> pixel tensor",
            official_pixels[0],
            ours_pixels,
        ),
        f"image rows {o0}..{o1} ({o1 - o0 + 1}) official vs {u0}..{u1} ({u1 - u0 + 1}) ours; "
        f"official int({height}/{width}*{side})={int(height / width * side)} (PIL bicubic)",
    )
    results.append(pixel_row)
    prepared = official_resize(image_path, side, adapter.processor.image_processor.background_color)
    fixed = adapter.processor.image_processor(prepared, return_tensors="pt")["pixel_values"][0]
    fp32 = (fixed - official_pixels[0]).abs().max().item()
    name, same, detail = compare_tensor(
        f"image preprocessing, official resize + pad done first (PIL), then ours: {dtype} tensor fed to the model",
        official_pixels[0].to(getattr(torch, dtype)),
        fixed.to(getattr(torch, dtype)),
    )
    results.append((name, same, f"{detail}; float32 max |diff| {fp32:.2g} (normalisation arithmetic)"))
    inv_freq_row = _with(
        compare_tensor(f"LLM rotary inv_freq in the {dtype} run", ref_und["inv_freq"], ours["inv_freq"]),
        f"official {ref_und['inv_freq'].dtype} (the script's vl_gpt.to(torch.bfloat16) casts buffers), ours "
        f"{ours['inv_freq'].dtype}",
    )
    results.append(inv_freq_row)

    # --- understanding --------------------------------------------------------------------------------------------
    name, same, detail = compare_ids(
        f"understanding: generated ids (greedy, 512 max, {dtype})", ref_und["generated_ids"], ours["generated_ids"]
    )
    results.append(
        (
            name,
            same,
            detail
            + (
                ""
                if same
                else "; of the pixel tensor and inv_freq (rows above), differing: "
                + (", ".join(row[0] for row in (pixel_row, inv_freq_row) if not row[1]) or "neither")
                + " (one cause at a time below)"
            ),
        )
    )
    results.append(
        compare_ids(
            "understanding, official pixel tensor only: generated ids",
            ref_und["generated_ids"],
            only_pixels["generated_ids"],
        )
    )
    results.append(
        compare_ids(
            "understanding, script's .to(bf16) only: generated ids",
            ref_und["generated_ids"],
            only_cast["generated_ids"],
        )
    )
    results.append(
        compare_ids("understanding, aligned (both): generated ids", ref_und["generated_ids"], aligned["generated_ids"])
    )

    # --- generation -----------------------------------------------------------------------------------------------
    official_probs, aligned_probs = torch.stack(ref_gen["probs_row0"]), torch.stack(ref_aligned["probs_row0"])
    aligned_tokens = ref_aligned["codes"][0][0]
    results.append(
        _with(
            compare_ids(
                f"generation: image tokens, README run (16 images, one global RNG) image 0 vs ours (seed {SEED})",
                forced,
                ours["generation"]["tokens"],
                "tokens",
            ),
            "RNG stream layout: the script draws its 16 rows together from the global generator at each step, ours "
            "1 row from its per-image generator (the RNG-aligned rows below)",
        )
    )
    results.append(
        _with(
            compare_ids(
                f"generation, RNG aligned (official generate(), parallel_size={ALIGNED_PARALLEL_SIZE}, seed {SEED}) "
                "vs ours: tokens",
                aligned_tokens,
                ours["generation"]["tokens"],
                "tokens",
            ),
            "the guided probabilities differ (next rows), so some draws differ",
        )
    )
    results.append(
        _with(
            compare_tensor(
                "generation, official 16-image tokens forced into ours: guided probabilities (576 x 16384)",
                official_probs,
                ours["forced"]["probs_row0"],
            ),
            "inv_freq and the cache (rows below)",
        )
    )
    results.append(
        compare_ids(
            "generation, aligned (script's .to(bf16)), RNG aligned: tokens",
            aligned_tokens,
            aligned["generation"]["tokens"],
            "tokens",
        )
    )
    static_steps = int(((aligned_probs - aligned["generation"]["probs_row0"]).abs().amax(dim=1) == 0).sum())
    results.append(
        _with(
            compare_tensor(
                "generation, aligned, RNG aligned: guided probabilities",
                aligned_probs,
                aligned["generation"]["probs_row0"],
            ),
            f"{static_steps}/576 steps exact; with a DynamicCache given to the image loop (the official loop's "
            "cache): next rows",
        )
    )
    results.append(
        compare_ids(
            "generation, aligned + DynamicCache, RNG aligned: tokens",
            aligned_tokens,
            dynamic["generation"]["tokens"],
            "tokens",
        )
    )
    results.append(
        compare_tensor(
            "generation, aligned + DynamicCache, RNG aligned: guided probabilities",
            aligned_probs,
            dynamic["generation"]["probs_row0"],
        )
    )
    results.append(
        compare_tensor(
            "generation, aligned + DynamicCache, 16-image tokens forced: guided probabilities",
            official_probs,
            dynamic["forced"]["probs_row0"],
        )
    )
    results.append(
        compare_tensor(
            "generation, aligned + DynamicCache, RNG aligned: decoded image (float, [-1, 1])",
            ref_aligned["decoded"][0][0].permute(1, 2, 0),
            dynamic["generation"]["decoded"],
        )
    )
    truncated = truncated_uint8(dynamic["generation"]["decoded"])
    exact = bool((truncated == ref_aligned["saved_arrays"][0]).all())
    results.append(
        _with(
            compare_tensor(
                "generation, aligned + DynamicCache, RNG aligned: uint8 image (the script's array before JPEG)",
                ref_aligned["saved_arrays"][0],
                dynamic["generation"]["pixels"],
                " levels",
            ),
            "the script truncates ((x+1)/2*255 stored into uint8); our float image truncated so: "
            f"{'bitwise equal' if exact else 'still differs'}",
        )
    )
    results.append(
        compare_tensor(
            "generation, official 16-image tokens forced: decoded image (float), ours as-is",
            ref_gen["decoded"][0][0].permute(1, 2, 0),
            ours["forced"]["decoded"],
        )
    )

    LAST_RUN.update(
        dtype=f"official {ref_und['dtype']}, ours {ours['dtype']}",
        reference_cpu_s={
            "inference.py (to the LLM)": round(ref_und_script["cpu_s"], 1),
            "generation_inference.py (to the LLM)": round(ref_gen_script["cpu_s"], 1),
            "README understanding": round(ref_und["cpu_s"], 1),
            "README generation (16 images)": round(ref_gen["cpu_s"], 1),
            f"generate(parallel_size={ALIGNED_PARALLEL_SIZE})": round(ref_aligned["cpu_s"], 1),
        },
        answers={"official": ref_und["answer"], "ours": ours["answer"], "ours, aligned": aligned["answer"]},
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", required=True, type=Path, help="checkout of github.com/deepseek-ai/Janus")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "janus_pro_parity")
    parser.add_argument("--env", help="reference environment (folder or its python); default <work>/env")
    args = parser.parse_args(argv)
    wall = time.time()
    results = checks(args.official, args.work, args.env)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    commit = LAST_RUN.get("commit", "?")
    note = "" if commit == OFFICIAL_COMMIT else f" (the facts name {OFFICIAL_COMMIT[:7]})"
    print(f"official: {args.official} @ {commit}{note}")
    print(f"reference python: {LAST_RUN.get('python')}")
    print(f"official checkpoint: {LAST_RUN.get('checkpoint')}")
    print(f"converted checkpoint: {LAST_RUN.get('converted')}")
    print(f"dtype: {LAST_RUN.get('dtype')}")
    print(f"reference CPU s: {LAST_RUN.get('reference_cpu_s')}")
    print("wall s: " + ", ".join(f"{k} {v:.1f}" for k, v in LAST_RUN.get("timings", {}).items()))
    answers = LAST_RUN.get("answers", {})
    print("answers: " + "; ".join(f"{k} {_short(v, 40)}" for k, v in answers.items()))
    print(
        "legend: 'aligned' = ours with the script's vl_gpt.to(torch.bfloat16) applied to the loaded model and, for "
        "understanding, the official pixel tensor; '+ DynamicCache' = the image loop given the official loop's cache"
    )
    common.print_checks(results)
    this = own.ru_utime + own.ru_stime
    reference = children.ru_utime + children.ru_stime
    print(
        f"CPU time: {this + reference:.0f} s (bench process {this:.0f} s, reference processes {reference:.0f} s); "
        f"wall {time.time() - wall:.0f} s"
    )
    print(common.verdict("janus_pro", results))
    return 0


if __name__ == "__main__":
    # Idle OpenMP threads sleep instead of spinning: same threads, same results, but on a shared machine the
    # spinning multiplied the CPU time of the tiny decoding loops (measured: 17 s -> 8 s for the README
    # understanding run beside a busy process; no change on an idle machine). Set before torch is imported.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.path.insert(0, str(REPO))
    sys.exit(main())
