"""CLIP-I, CLIP-T, choices and CLIPSIM on a tiny random open_clip model, checked against open_clip directly."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import open_clip
import pytest
import torch
import torch.nn.functional as F

from lmms_eval_unify.metrics import (
    clip_choice,
    clip_choices,
    clip_image_similarity,
    clip_t,
    clip_text_choice,
    clipsim,
    get_clip,
)

TEXTS = ["a red square on a white background", "two cats", "a maze with a blue start cell"]


def _direct_image_embeddings(config, images):
    """open_clip's own path: its eval transform on already 32x32 images (no resize) and encode_image."""
    clip = get_clip(config)
    mean, std = open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD
    batch = torch.stack(
        [
            (image.float() / 255 - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]
            for image in images
        ]
    )
    with torch.no_grad():
        return F.normalize(clip.model.encode_image(batch).double(), dim=-1)


def _direct_text_embeddings(config, texts):
    clip = get_clip(config)
    with torch.no_grad():
        return F.normalize(clip.model.encode_text(open_clip.get_tokenizer("ViT-B-32")(texts)).double(), dim=-1)


def test_clip_i_equals_open_clip_cosine(tiny_clip_config, make_images):
    a, b = make_images(3), make_images(3, seed=1)
    expected = (_direct_image_embeddings(tiny_clip_config, a) * _direct_image_embeddings(tiny_clip_config, b)).sum(-1)
    got = clip_image_similarity(a, b, tiny_clip_config)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_identical_images_have_clip_i_one(tiny_clip_config, make_images):
    images = make_images(4, 50, 70)
    torch.testing.assert_close(
        clip_image_similarity(images, images, tiny_clip_config), torch.ones(4, dtype=torch.float64)
    )


def test_clip_t_is_scaled_cosine(tiny_clip_config, make_images):
    images = make_images(3)
    cosine = (
        _direct_image_embeddings(tiny_clip_config, images) * _direct_text_embeddings(tiny_clip_config, TEXTS)
    ).sum(-1)
    torch.testing.assert_close(clip_t(images, TEXTS, config=tiny_clip_config), cosine, rtol=0, atol=1e-6)
    logit_scale = get_clip(tiny_clip_config).model.logit_scale.exp().item()
    scaled = clip_t(images, TEXTS, scale="logit", config=tiny_clip_config)
    torch.testing.assert_close(scaled, logit_scale * cosine, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(
        clip_t(images, TEXTS, scale=100.0, config=tiny_clip_config), 100 * cosine, rtol=0, atol=1e-4
    )


def test_clip_t_word_limit_cuts_the_prompt(tiny_clip_config, make_images):
    image = make_images(1)
    long_prompt = "a red square on a white background and many more words"
    cut = clip_t(image, [long_prompt], max_words=3, config=tiny_clip_config)
    torch.testing.assert_close(cut, clip_t(image, ["a red square"], config=tiny_clip_config))


def test_clip_choice_picks_the_matching_candidate(tiny_clip_config, make_images):
    candidates = make_images(4, 40, 40)
    for k in range(4):
        choice = clip_choice(candidates[k].clone(), candidates, tiny_clip_config)
        assert choice.index == k and choice.similarities[k] == pytest.approx(1.0, abs=1e-12)
        assert len(choice.similarities) == 4


def test_exact_ties_go_to_the_lowest_index(tiny_clip_config, make_images):
    generated, other = make_images(2, seed=5)
    assert clip_choice(generated, [other, other.clone(), generated], tiny_clip_config).index == 2
    assert clip_choice(generated, [other, generated, generated.clone()], tiny_clip_config).index == 1


def test_batched_choices_equal_one_by_one_on_cpu_fp32(tiny_clip_config, make_images):
    generated = make_images(12, 36, 30, seed=2)
    shared = make_images(4, 48, 48, seed=3)
    per_sample = [shared if i % 2 else make_images(4, seed=10 + i) for i in range(12)]
    batched = clip_choices(generated, per_sample, tiny_clip_config)
    one_config = dataclasses.replace(tiny_clip_config, batch_size=1)  # a fresh backbone, forward one at a time
    singles = [clip_choice(g, c, one_config) for g, c in zip(generated, per_sample, strict=True)]
    assert [c.index for c in batched] == [c.index for c in singles]
    for b, s in zip(batched, singles, strict=True):
        assert b.similarities == pytest.approx(s.similarities, abs=1e-6)


def test_shared_candidates_are_embedded_once(tiny_clip_config, make_images, monkeypatch):
    config = dataclasses.replace(tiny_clip_config, batch_size=7)  # its own backbone and cache
    clip = get_clip(config)
    forwarded = []
    original = clip.images.forward
    monkeypatch.setattr(clip.images, "forward", lambda batch: forwarded.append(batch.shape[0]) or original(batch))
    shared = make_images(4, seed=20)
    clip_choices(make_images(10, seed=21), [shared] * 10, config)
    assert sum(forwarded) == 14
    clip_choice(make_images(1, seed=22)[0], shared, config)
    assert sum(forwarded) == 15


def test_clip_text_choice(tiny_clip_config):
    options = ["(A) a cat", "(B) a dog", "(C) a red square", "(D) a maze"]
    choice = clip_text_choice("(C) a red square", options, tiny_clip_config)
    assert choice.index == 2 and choice.similarities[2] == pytest.approx(1.0, abs=1e-12)
    expected = (
        _direct_text_embeddings(tiny_clip_config, options) @ _direct_text_embeddings(tiny_clip_config, ["(A) a cat"])[0]
    )
    assert clip_text_choice("(A) a cat", options, tiny_clip_config).similarities == pytest.approx(
        expected.tolist(), abs=1e-6
    )


def test_clipsim_is_mean_frame_text_cosine(tiny_clip_config, make_images):
    video_a, video_b = make_images(5, seed=30), make_images(3, seed=31)
    got = clipsim([torch.stack(video_a), video_b], TEXTS[:2], config=tiny_clip_config)
    expected = [
        clip_t(video, [text] * len(video), config=tiny_clip_config).mean()
        for video, text in zip([video_a, video_b], TEXTS[:2], strict=True)
    ]
    torch.testing.assert_close(got, torch.stack(expected))


def test_bf16_autocast_stays_close_to_fp32(tiny_clip_config, make_images):
    images, other = make_images(4), make_images(4, seed=1)
    bf16 = dataclasses.replace(tiny_clip_config, dtype="bf16")
    fp32_values = clip_image_similarity(images, other, tiny_clip_config)
    bf16_values = clip_image_similarity(images, other, bf16)
    assert bf16_values.dtype == torch.float64
    torch.testing.assert_close(bf16_values, fp32_values, rtol=0, atol=2e-2)


def test_threads_share_one_backbone_and_agree(tiny_clip_config, make_images):
    config = dataclasses.replace(tiny_clip_config, batch_size=3)
    images, other = make_images(6, seed=40), make_images(6, seed=41)
    expected = clip_image_similarity(images, other, dataclasses.replace(config, batch_size=5))
    barrier = threading.Barrier(4)

    def run(i):
        barrier.wait()
        return clip_image_similarity(images[i:] + images[:i], other[i:] + other[:i], config), get_clip(config)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    assert all(backbone is results[0][1] for _, backbone in results)
    for i, (values, _) in enumerate(results):
        torch.testing.assert_close(values, torch.roll(expected, -i), rtol=0, atol=1e-6)


def test_mismatched_lengths_are_rejected(tiny_clip_config, make_images):
    with pytest.raises(ValueError):
        clip_image_similarity(make_images(2), make_images(1), tiny_clip_config)
    with pytest.raises(ValueError):
        clip_t(make_images(2), ["one text"], config=tiny_clip_config)
    with pytest.raises(ValueError):
        clip_choices(make_images(2), [make_images(3)], tiny_clip_config)
