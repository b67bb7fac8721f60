"""The embedding cache and batched encoder shared by all backbones."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from lmms_eval_unify.metrics import resolve_config
from lmms_eval_unify.metrics.encoders import EmbeddingCache, ImageEncoder, unique_image_items
from lmms_eval_unify.metrics.images import ImageTransform, group_by_shape


def test_cache_computes_each_key_once_and_keeps_order():
    cache = EmbeddingCache()
    requested = []

    def compute(indices):
        requested.append(list(indices))
        return torch.tensor([[float(i)] for i in indices])

    first = cache.get_or_compute(["a", "b", "a"], compute)
    assert requested == [[0, 1]] and first.flatten().tolist() == [0.0, 1.0, 0.0]
    second = cache.get_or_compute(["c", "b"], compute)
    assert requested == [[0, 1], [0]] and second.flatten().tolist() == [0.0, 1.0]


def test_cache_evicts_least_recently_used():
    cache = EmbeddingCache(max_entries=2)
    cache.get_or_compute(["a", "b"], lambda idx: torch.zeros(len(idx), 1))
    cache.get_or_compute(["a"], lambda idx: torch.zeros(len(idx), 1))
    cache.get_or_compute(["c"], lambda idx: torch.zeros(len(idx), 1))
    recomputed = []
    cache.get_or_compute(["a", "b"], lambda idx: recomputed.extend(idx) or torch.zeros(len(idx), 1))
    assert recomputed == [1]  # "b" was evicted, "a" was kept


def _counting_encoder(batch_size: int, calls: list[int]) -> ImageEncoder:
    config = resolve_config("fid", backbone="tiny", weights="random", device="cpu", batch_size=batch_size)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())

    def forward(batch):
        calls.append(batch.shape[0])
        return net(batch)

    return ImageEncoder(config, ImageTransform(16, "squash"), forward)


def test_batches_respect_batch_size_and_match_one_by_one(make_images):
    images = make_images(5, 20, 20) + make_images(2, 30, 10, seed=1)
    calls: list[int] = []
    batched = _counting_encoder(4, calls).embed(images)
    assert calls == [4, 3]  # differently sized inputs share batches once transformed to one size
    singles = torch.cat([_counting_encoder(1, []).embed([image]) for image in images])
    torch.testing.assert_close(batched, singles, rtol=0, atol=1e-6)


def test_repeated_images_are_encoded_once(make_images):
    image = make_images(1)[0]
    calls: list[int] = []
    encoder = _counting_encoder(8, calls)
    out = encoder.embed([image, image.clone(), image])
    assert sum(calls) == 1 and torch.equal(out[0], out[2])
    encoder.embed([image])
    assert sum(calls) == 1


def test_repeated_paths_and_objects_are_read_and_hashed_once_per_call(tmp_path, make_images):
    image = make_images(1)[0]
    path = tmp_path / "a.png"
    Image.fromarray(image.permute(1, 2, 0).numpy()).save(path)
    items = unique_image_items([str(path), path, image, image, image.clone()])
    assert items[0] is items[1] and items[2] is items[3]
    assert items[4] is not items[2] and items[4].key == items[2].key


def _png_files(tmp_path, images) -> list[str]:
    paths = []
    for k, image in enumerate(images):
        path = tmp_path / f"{k}.png"
        Image.fromarray(image.permute(1, 2, 0).numpy()).save(path)
        paths.append(str(path))
    return paths


def test_parallel_pipeline_from_files_equals_serial_path(tmp_path, make_images, monkeypatch):
    images = make_images(9, 20, 20) + make_images(4, 30, 10, seed=1)
    paths = _png_files(tmp_path, images)
    from_tensors = _counting_encoder(4, []).embed(images)  # decoded pixels in, nothing to read or decode
    by_workers = {}
    for workers in (1, 3, 8):
        monkeypatch.setenv("LMMS_EVAL_UNIFY_DECODE_WORKERS", str(workers))
        by_workers[workers] = _counting_encoder(4, []).embed(paths)
    for out in by_workers.values():
        assert torch.equal(out, by_workers[1])  # the worker count never changes a result
    torch.testing.assert_close(by_workers[1], from_tensors, rtol=0, atol=1e-6)


def test_parallel_pipeline_still_reports_a_corrupt_file(tmp_path, make_images, monkeypatch):
    paths = _png_files(tmp_path, make_images(6))
    with open(paths[3], "wb") as f:
        f.write(b"not an image")
    for workers in ("1", "4"):
        monkeypatch.setenv("LMMS_EVAL_UNIFY_DECODE_WORKERS", workers)
        with pytest.raises(Exception) as caught:
            _counting_encoder(2, []).embed(paths)
        assert "identify" in str(caught.value) or "decode" in str(caught.value).lower()


def _restacked_features(encoder: ImageEncoder, pixels: list[torch.Tensor]) -> torch.Tensor:
    """The general path of ``embed_pixels``: transform per shape, rows restacked per transformed shape."""
    rows = [torch.empty(0)] * len(pixels)
    for indices, batch in group_by_shape(pixels):
        for i, row in zip(indices, encoder.transform(batch), strict=True):
            rows[i] = row
    features = [torch.empty(0)] * len(pixels)
    for indices, batch in group_by_shape(rows):
        for start in range(0, len(indices), encoder.config.batch_size):
            chunk = indices[start : start + encoder.config.batch_size]
            for i, row in zip(chunk, encoder._forward(batch[start : start + len(chunk)]).float(), strict=True):
                features[i] = row
    return torch.stack(features)


@pytest.mark.parametrize("family", ["clip_score", "fid"])
def test_one_shape_batches_skip_the_restacking_with_bit_identical_features(family, make_images):
    """CLIP's centre crop hands over a strided view, the FID net runs channels-last: same batches, same bits."""
    from lmms_eval_unify.metrics.clip import get_clip
    from lmms_eval_unify.metrics.fid_fvd import load_image_features
    from lmms_eval_unify.metrics.registry import get_backbone

    config = resolve_config(family, backbone="tiny", weights="random", device="cpu", batch_size=4)
    encoder = get_clip(config).images if family == "clip_score" else get_backbone(config, load_image_features)
    images = make_images(10, 48, 40)
    assert torch.equal(encoder.embed_pixels(images), _restacked_features(encoder, images))
