"""Emu3 (BAAI) through transformers' native ``Emu3ForConditionalGeneration``: two checkpoints.

Emu3 ships an understanding checkpoint (``BAAI/Emu3-Chat-hf``) and a generation checkpoint
(``BAAI/Emu3-Gen-hf``); the adapter loads both (once, when they are the same path). Everything follows BAAI's
own scripts (baaivision/Emu3 f6ea9aa: ``multimodal_understanding.py``, ``image_generation.py``, measured by
bench/parity/emu3.py) where the transformers port departs from them:

* the prompt is the official processor's template, ``You are a helpful assistant. USER: <image…>{prompt}.
  ASSISTANT:`` (the converted checkpoints' chat template drops the system line and the period);
* the tokenizer splits text with Qwen's pre-tokenizer regex, as the official tiktoken tokenizer does (the
  conversion keeps GPT-2's, which groups digits: the generation prefix ``90*90`` tokenizes differently);
* the vision tokenizer (VQ) runs in float32 on float32 pixels and the language model's logits are float32, as in
  the official code (the port loads one dtype for the whole checkpoint);
* generation: the processor appends ``boi H*W <image wrapper>`` for a latent grid of ``image_area`` pixels, the
  classifier-free-guidance negative prompt is built by the same processor call (so it carries that prefix too),
  decoding is constrained to visual tokens with an end-of-line token every ``W + 1`` positions and the closing
  ``eof eoi eos`` tokens, the official top-k (2048) applies before each draw, and
  ``decode_image_tokens`` returns channels-first pixels in [-1, 1].

Emu3-Gen cannot edit: input images of a generation request are not given to the generator (logged once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image
from transformers import LogitsProcessorList

from lmms_eval_unify.adapter import (
    UNDERSTAND_AND_GENERATE,
    Missing,
    ModelSettings,
    UnifiedModel,
    decoding_options,
    missing_code,
    missing_device,
    missing_weights,
    seeded,
)

from .hf_common import (
    TEXT_ONLY_GENERATION_NOTE,
    OnceLogger,
    SeededRowSampler,
    decode_new_tokens,
    sampling_warpers,
    signed_pixels_to_pil,
)

EOL_TOKEN = "<|extra_200|>"
NEGATIVE_PROMPT = (
    "lowres, bad anatomy, bad hands, text, error, missing fingers, extra digit, fewer digits, cropped, worst "
    "quality, low quality, normal quality, jpeg artifacts, signature, watermark, username, blurry."
)
POSITIVE_SUFFIX = " masterpiece, film grained, best quality."


def use_qwen_pretokenizer(tokenizer: Any) -> None:
    """Split text as the official tiktoken tokenizer does, with Qwen's regex (one digit per piece) instead of the
    GPT-2 regex transformers' conversion keeps (digits grouped), then byte-level as before."""
    from tokenizers import Regex, pre_tokenizers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


class VisualTokenConstraint:
    """``prefix_allowed_tokens_fn`` that makes ``generate`` emit exactly one ``height x width`` token image."""

    def __init__(self, tokenizer: Any, visual_tokens: list[int], height: int, width: int) -> None:
        self.wrapper_id = tokenizer.image_wrapper_token_id
        self.height, self.width = height, width
        self.visual = list(visual_tokens)
        self.eol = [tokenizer.convert_tokens_to_ids(EOL_TOKEN)]
        end = (width + 1) * height
        self.closing = {
            end + 1: [tokenizer.eof_token_id],
            end + 2: [tokenizer.eoi_token_id],
            end + 3: [tokenizer.eos_token_id],
        }
        self.pad = [tokenizer.pad_token_id]
        self.end = end

    def __call__(self, batch_id: int, input_ids: torch.Tensor) -> list[int]:
        position = int(torch.nonzero(input_ids == self.wrapper_id, as_tuple=True)[0][-1])
        offset = input_ids.shape[0] - position
        if offset in self.closing:  # checked before the row rule, so the last token is EOS (not EOL)
            return self.closing[offset]
        if offset > self.end + 3:
            return self.pad
        return self.eol if offset % (self.width + 1) == 0 else self.visual


@dataclass(frozen=True, kw_only=True)
class Emu3Settings(ModelSettings):
    pretrained: str = "BAAI/Emu3-Chat-hf"
    """Understanding checkpoint."""
    pretrained_gen: str = "BAAI/Emu3-Gen-hf"
    """Generation checkpoint (loaded once when it is ``pretrained``)."""
    guidance_scale: float = 3.0
    """Classifier-free guidance (``image_generation.py:34``)."""
    top_k: int = 2048
    """Image tokens are drawn from the ``top_k`` most likely (``image_generation.py:55``)."""
    image_area: int = 720 * 720
    ratio: str = "1:1"
    max_new_tokens: int | None = None
    """Caps every task's ``max_new_tokens`` (``None``: the task's value)."""


class Emu3(UnifiedModel):
    """Emu3 Chat (understanding) + Emu3 Gen (text-to-image)."""

    model_id = "emu3"
    capabilities = UNDERSTAND_AND_GENERATE
    settings_class = Emu3Settings
    settings: Emu3Settings

    @classmethod
    def missing(cls, settings: Emu3Settings) -> list[Missing]:
        checkpoints = {settings.pretrained: "pretrained"}
        checkpoints.setdefault(settings.pretrained_gen, "pretrained_gen")  # loaded once when they are the same
        weights = [m for path, arg in checkpoints.items() for m in missing_weights(cls.model_id, path, argument=arg)]
        return [
            *missing_code(
                cls.model_id,
                "transformers",
                ("Emu3ForConditionalGeneration", "Emu3Processor"),
                "pip install -U 'transformers>=4.48'",
            ),
            *weights,
            *missing_device(cls.model_id, settings.device),
        ]

    def __init__(self, **model_args: Any) -> None:
        super().__init__(**model_args)
        self.processor, self.model = self._load(self.settings.pretrained)
        if self.settings.pretrained_gen == self.settings.pretrained:
            self.gen_processor, self.gen_model = self.processor, self.model
        else:
            self.gen_processor, self.gen_model = self._load(self.settings.pretrained_gen)
        self._notes = OnceLogger()

    def _load(self, path: str) -> tuple[Any, Any]:
        from transformers import Emu3ForConditionalGeneration, Emu3Processor

        processor = Emu3Processor.from_pretrained(path)
        processor.tokenizer.padding_side = "left"
        use_qwen_pretokenizer(processor.tokenizer)
        model = Emu3ForConditionalGeneration.from_pretrained(path, dtype=torch.float32)
        model = model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' @wraps(Module.to)
        # The VQ stays float32, as the official vision tokenizer. Only the language model's parameters take the
        # run's dtype: its rotary frequencies stay float32, as when the whole checkpoint loads in that dtype.
        for parameter in [*model.model.text_model.parameters(), *model.lm_head.parameters()]:
            parameter.data = parameter.data.to(self.dtype)
        model.lm_head.register_forward_hook(lambda module, args, logits: logits.float())  # official: logits.float()
        return processor, model

    @staticmethod
    def _prompt(images: list[Image.Image], prompt: str) -> str:
        """The official processor's template (``processing_emu3.py``'s ``chat_template``)."""
        return f"You are a helpful assistant. USER: {'<image>' * len(images)}{prompt}. ASSISTANT:"

    @torch.inference_mode()
    def understand_batch(self, batch: list[tuple[list[Image.Image], str]], **decoding: Any) -> list[str]:
        texts = [self._prompt(images, prompt) for images, prompt in batch]
        images = [image for item_images, _ in batch for image in item_images] or None
        inputs = self.processor(text=texts, images=images, padding=True, return_tensors="pt")
        inputs = inputs.to(self.device)  # pixels stay float32 for the float32 VQ
        with seeded(int(decoding.get("seed", self.seed)), self.device):
            output = self.model.generate(**inputs, **decoding_options(decoding, self.settings.max_new_tokens))
        return decode_new_tokens(self.processor, output, inputs["input_ids"].shape[1])

    def generation_inputs(self, texts: list[str]) -> Any:
        """``texts`` through the generation processor in image-generation mode, as ``image_generation.py`` builds
        both its positive and its negative inputs: each ends with ``boi H*W <image wrapper>``."""
        return self.gen_processor(
            text=texts,
            return_for_image_generation=True,
            image_area=self.settings.image_area,
            ratio=self.settings.ratio,
            padding=True,
            return_tensors="pt",
        ).to(self.device)

    def understand(self, images: list[Image.Image], prompt: str, **decoding: Any) -> str:
        return self.understand_batch([(images, prompt)], **decoding)[0]

    def generate_image(self, prompt: str, images: list[Image.Image], **decoding: Any) -> Image.Image:
        return self.generate_image_batch([(prompt, images, decoding)])[0]

    @torch.inference_mode()
    def generate_image_batch(self, batch: list[tuple[str, list[Image.Image], dict[str, Any]]]) -> list[Image.Image]:
        """One ``generate`` call for the batch (the negative prompt repeated per row); each image keeps its
        own seed through a per-row sampler placed after guidance and the visual-token constraint."""
        if any(images for _, images, _ in batch):
            n = max(len(images) for _, images, _ in batch)
            self._notes.warn(TEXT_ONLY_GENERATION_NOTE.format(model=self.model_id, n=n))
        processor, model = self.gen_processor, self.gen_model
        inputs, negative = (
            self.generation_inputs([prompt + POSITIVE_SUFFIX for prompt, _, _ in batch]),
            self.generation_inputs([NEGATIVE_PROMPT] * len(batch)),
        )
        height, width = (int(v) for v in inputs.pop("image_sizes")[0])
        negative.pop("image_sizes")
        constraint = VisualTokenConstraint(processor.tokenizer, model.vocabulary_mapping.image_tokens, height, width)
        seeds = [int(decoding["seed"]) for _, _, decoding in batch]
        sampler = SeededRowSampler(seeds, self.device, warpers=sampling_warpers(top_k=self.settings.top_k))
        output = model.generate(
            **inputs,
            max_new_tokens=(width + 1) * height + 3,
            do_sample=True,
            prefix_allowed_tokens_fn=constraint,
            guidance_scale=self.settings.guidance_scale,
            negative_prompt_ids=negative["input_ids"],
            negative_prompt_attention_mask=negative["attention_mask"],
            logits_processor=LogitsProcessorList([sampler]),
        )
        tokens = output[:, inputs["input_ids"].shape[1] :]
        pixels = model.decode_image_tokens(image_tokens=tokens, height=height, width=width)  # (B, C, H, W)
        return [signed_pixels_to_pil(p, channels_first=True) for p in pixels]
