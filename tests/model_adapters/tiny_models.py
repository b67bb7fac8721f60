"""Tiny randomly initialised checkpoints of real transformers classes, written to a folder for adapters.

Every model is a few hundred thousand parameters and loads through the same ``from_pretrained`` code path as
the published checkpoints; the tokenizers are word-level and built in code (no download).
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers

WORDS = (
    "a the of to and is in what which image maze step move up down left right done next one answer final "
    "generate puzzle blue green dot goal now output single line solve state after this 0 1 2 3 4 5 6 7 8 9 *"
).split()

JANUS_CHAT_TEMPLATE = (
    "{% for message in messages %}<|User|>: {% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image_placeholder> {% else %}{{ item['text'] }}{% endif %}"
    "{% endfor %} {% endfor %}{% if add_generation_prompt %}<|Assistant|>:{% endif %}"
)


def _word_tokenizer(specials: list[str], **named: str):
    """A whitespace word-level fast tokenizer whose ids start with ``specials``."""
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate([*specials, *WORDS])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", **named)
    tokenizer.add_special_tokens({"additional_special_tokens": [s for s in specials if s.startswith("<")]})
    return tokenizer


def _prefer_words(lm_head_weight: torch.Tensor, n_specials: int) -> None:
    """Zero the output rows of the special tokens, so greedy decoding of a random model says words."""
    with torch.no_grad():
        lm_head_weight[:n_specials] = 0


JANUS_PRO_1B_TEXT = dict(
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=24,
    num_attention_heads=16,
    num_key_value_heads=16,
    max_position_embeddings=16384,
)
"""The language model of Janus-Pro-1B (DeepSeek-LLM 1.3B); its vision encoder (SigLIP-L, 384 px, 576 tokens) and
VQ tokenizer (16,384 codes, 16x downsampling) are transformers' ``JanusConfig`` defaults."""


def janus_config(shape: str, vocab_size: int, image_token_id: int):
    """``JanusConfig`` of the ``tiny`` test model or of the ``janus-pro-1b`` architecture (1.87 B parameters
    with our word-level vocabulary padded to DeepSeek's 102,400 ids)."""
    from transformers import JanusConfig

    if shape == "janus-pro-1b":
        text = dict(model_type="llama", vocab_size=102400, pad_token_id=0, **JANUS_PRO_1B_TEXT)
        return JanusConfig(text_config=text, image_token_id=image_token_id)
    if shape != "tiny":
        raise ValueError(f"unknown Janus shape {shape!r}: tiny or janus-pro-1b")
    return JanusConfig(
        text_config=dict(
            model_type="llama",
            vocab_size=vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            pad_token_id=0,
        ),
        vision_config=dict(
            image_size=20,
            patch_size=5,
            num_image_tokens=16,
            hidden_size=32,
            projection_dim=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            mlp_ratio=2,
        ),
        vq_config=dict(
            embed_dim=12,
            num_embeddings=12,
            latent_channels=12,
            base_channels=32,
            channel_multiplier=[1, 1],
            projection_dim=32,
            image_token_embed_dim=32,
        ),
        image_token_id=image_token_id,
    )


def write_tiny_janus(folder: Path, shape: str = "tiny") -> Path:
    """A randomly initialised Janus with processor and chat template: ``tiny`` is ~0.4 M parameters (20 px
    input, 16 image tokens, 8 px output); ``janus-pro-1b`` is the full-size architecture (384 px, 576 image
    tokens), saved in bf16, for GPU benchmarks."""
    from transformers import GenerationConfig, JanusForConditionalGeneration, JanusProcessor
    from transformers.models.janus.image_processing_pil_janus import JanusImageProcessorPil

    specials = [
        "<pad>",
        "<s>",
        "</s>",
        "<unk>",
        "<image_placeholder>",
        "<begin_of_image>",
        "<end_of_image>",
        "<|User|>:",
        "<|Assistant|>:",
    ]
    tokenizer = _word_tokenizer(
        specials,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens={
            "image_token": "<image_placeholder>",
            "boi_token": "<begin_of_image>",
            "eoi_token": "<end_of_image>",
        },
    )
    tokenizer.padding_side = "left"
    config = janus_config(shape, len(tokenizer), tokenizer.convert_tokens_to_ids("<image_placeholder>"))
    torch.manual_seed(0)
    model = JanusForConditionalGeneration(config).eval()
    _prefer_words(model.lm_head.weight, len(specials))
    model.generation_config = GenerationConfig(
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        generation_kwargs={"boi_token_id": tokenizer.convert_tokens_to_ids("<begin_of_image>")},
    )
    side = config.vision_config.image_size
    image_processor = JanusImageProcessorPil(
        size={"height": side, "width": side}, image_mean=[0.5] * 3, image_std=[0.5] * 3
    )
    processor = JanusProcessor(
        image_processor,
        tokenizer,
        chat_template=JANUS_CHAT_TEMPLATE,
        num_image_tokens=config.vision_config.num_image_tokens,
        use_default_system_prompt=False,
    )
    if shape != "tiny":
        model = model.to(torch.bfloat16)  # half the disk; the adapter loads it in its own dtype
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


EMU3_CODEBOOK = 20


def write_tiny_emu3(folder: Path) -> Path:
    """A ~0.8 M-parameter Emu3 (spatial factor 8: 16 px images are 2x2 latents) with its processor.

    The visual tokens ``<|visual token%06d|>`` are numbered by VQ code, as ``Emu3ImageVocabularyMapping``
    parses the digits as the code.
    """
    from transformers import Emu3Config, Emu3ForConditionalGeneration, Emu3Processor, GenerationConfig
    from transformers.models.emu3.image_processing_emu3 import Emu3ImageProcessor

    named = {
        "image_token": "<image>",
        "boi_token": "<|image start|>",
        "eoi_token": "<|image end|>",
        "image_wrapper_token": "<|image token|>",
        "eof_token": "<|extra_201|>",
    }
    specials = ["<pad>", "<s>", "</s>", "<unk>", *named.values(), "<|extra_200|>"]
    specials += [f"<|visual token{code:06d}|>" for code in range(EMU3_CODEBOOK)]
    tokenizer = _word_tokenizer(
        specials, bos_token="<s>", eos_token="</s>", pad_token="<pad>", extra_special_tokens=named
    )
    tokenizer.padding_side = "left"
    config = Emu3Config(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            intermediate_size=37,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
        ),
        vq_config=dict(
            codebook_size=EMU3_CODEBOOK,
            temporal_downsample_factor=1,
            base_channels=32,
            channel_multiplier=[1, 1, 1, 1],
            hidden_size=32,
            attn_resolutions=[],
        ),
        vocabulary_map=dict(tokenizer.get_vocab()),
    )
    torch.manual_seed(0)
    model = Emu3ForConditionalGeneration(config).eval()
    _prefer_words(model.lm_head.weight, 4)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0)
    image_processor = Emu3ImageProcessor(min_pixels=16 * 16, max_pixels=16 * 16, spatial_factor=8)
    model.save_pretrained(folder)
    Emu3Processor(image_processor, tokenizer).save_pretrained(folder)
    return folder


QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]


def _qwen_tokenizer():
    """A byte-level BPE trained in memory on the pipeline's own template (it must split into > 64 tokens)."""
    from tokenizers import decoders, trainers
    from transformers import Qwen2TokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    corpus = [
        " ".join(WORDS),
        "Describe the key features of the input image (color, shape, size, texture, objects)",
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=QWEN_SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    backend.train_from_iterator(corpus, trainer)
    return Qwen2TokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )


QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tiny_qwen2_5_vl():
    """A 2-layer Qwen2.5-VL and its processor (56 px images: 4 patches merged into 1 token)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    tokenizer = _qwen_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    config = Qwen2_5_VLConfig(
        text_config=dict(
            hidden_size=16,
            intermediate_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=len(tokenizer),
            bos_token_id=None,
            eos_token_id=tokenizer.eos_token_id,
            rope_scaling={"mrope_section": [1, 1, 2], "rope_type": "default"},
        ),
        vision_config=dict(depth=2, hidden_size=16, intermediate_size=16, num_heads=2, out_hidden_size=16),
        hidden_size=16,
        vocab_size=len(tokenizer),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=56 * 56),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    return model, processor


def write_tiny_qwen2_5_vl(folder: Path) -> Path:
    """A tiny Qwen2.5-VL checkpoint, loadable by lmms-eval's own ``qwen2_5_vl`` model."""
    torch.manual_seed(0)
    model, processor = _tiny_qwen2_5_vl()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def write_tiny_qwen_image_edit(folder: Path) -> Path:
    """A tiny ``QwenImageEditPipeline`` (2-layer transformer, small VAE, the tiny Qwen2.5-VL as text encoder)."""
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImageEditPipeline,
        QwenImageTransformer2DModel,
    )

    torch.manual_seed(0)
    text_encoder, processor = _tiny_qwen2_5_vl()
    pipeline = QwenImageEditPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=AutoencoderKLQwenImage(
            base_dim=8,
            z_dim=4,
            dim_mult=[1, 2, 4],
            num_res_blocks=1,
            temperal_downsample=[False, True],
            latents_mean=[0.0] * 4,
            latents_std=[1.0] * 4,
        ),
        text_encoder=text_encoder,
        tokenizer=processor.tokenizer,
        processor=processor,
        transformer=QwenImageTransformer2DModel(
            patch_size=2,
            in_channels=16,
            out_channels=4,
            num_layers=2,
            attention_head_dim=16,
            num_attention_heads=3,
            joint_attention_dim=16,
            guidance_embeds=False,
            axes_dims_rope=(8, 4, 4),
        ),
    )
    pipeline.save_pretrained(folder)
    return folder
