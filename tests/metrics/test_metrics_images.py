"""Input hashing, decoding and the batched tensor transform."""

from __future__ import annotations

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image
from torchvision import transforms
from torchvision.transforms import InterpolationMode

from lmms_eval_unify.metrics.images import ImageTransform, decode_items, group_by_shape, image_item

CPU = torch.device("cpu")


def _pil(tensor: torch.Tensor) -> Image.Image:
    return Image.fromarray(tensor.permute(1, 2, 0).numpy())


def test_same_pixels_give_same_key_for_pil_and_tensor(make_images):
    image = make_images(1)[0]
    assert image_item(image).key == image_item(_pil(image)).key
    assert image_item(image).key != image_item(make_images(1, seed=1)[0]).key


def test_file_inputs_are_hashed_by_bytes_and_decoded_losslessly(tmp_path, make_images):
    image = make_images(1, 20, 30)[0]
    path = tmp_path / "a.png"
    _pil(image).save(path)
    copy = tmp_path / "b.png"
    copy.write_bytes(path.read_bytes())
    assert image_item(str(path)).key == image_item(copy).key
    (decoded,) = decode_items([image_item(path)], CPU)
    assert torch.equal(decoded, image)


@pytest.mark.parametrize("suffix", ["jpg", "bmp", "webp"])
def test_other_formats_decode_to_rgb_like_pil(tmp_path, make_images, suffix):
    path = tmp_path / f"a.{suffix}"
    _pil(make_images(1, 24, 24)[0]).save(path)
    (decoded,) = decode_items([image_item(str(path))], CPU)
    expected = torch.from_numpy(np.array(Image.open(path).convert("RGB"))).permute(2, 0, 1)
    assert decoded.shape == (3, 24, 24)
    assert (decoded.int() - expected.int()).abs().max() <= 2  # JPEG decoders may differ by rounding


def test_grayscale_and_rgba_tensors_become_rgb():
    gray = torch.full((1, 4, 4), 7, dtype=torch.uint8)
    (decoded,) = decode_items([image_item(gray)], CPU)
    assert decoded.shape == (3, 4, 4) and int(decoded.max()) == 7
    rgba = torch.zeros((4, 4, 4), dtype=torch.uint8)
    assert decode_items([image_item(rgba)], CPU)[0].shape == (3, 4, 4)


@pytest.mark.parametrize("bad", [torch.zeros(3, 4, 4), torch.zeros(4, 4, dtype=torch.uint8), 3.0])
def test_unsupported_inputs_are_rejected(bad):
    with pytest.raises((TypeError, ValueError)):
        image_item(bad)


def test_group_by_shape_keeps_indices(make_images):
    images = make_images(2, 8, 8) + make_images(1, 9, 8) + make_images(1, 8, 8, seed=3)
    groups = group_by_shape(images)
    assert sorted(idx for indices, _ in groups for idx in indices) == [0, 1, 2, 3]
    for indices, batch in groups:
        for i, tensor in zip(indices, batch, strict=True):
            assert torch.equal(tensor, images[i])


def test_clip_transform_matches_open_clip_pil_preprocessing(make_images):
    """The batched tensor transform agrees with open_clip's PIL eval transform within one uint8 step."""
    mean, std = open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD
    pil_transform = open_clip.image_transform(32, is_train=False, mean=mean, std=std)
    ours = ImageTransform(32, "shortest_crop", mean=mean, std=std)
    for image in make_images(3, 64, 48):
        expected = pil_transform(_pil(image))
        got = ours(image[None])[0]
        assert got.shape == expected.shape == (3, 32, 32)
        one_step = 1.0 / 255.0 / min(std)
        assert (got - expected).abs().max() <= one_step + 1e-6
        assert (got - expected).abs().mean() < 0.1 * one_step


def test_parallel_map_keeps_order_and_raises_the_first_error():
    from lmms_eval_unify.metrics.images import parallel_map

    assert parallel_map(lambda x: x * x, range(50), workers=4) == [x * x for x in range(50)]

    def fail_on_odd(x: int) -> int:
        if x % 2:
            raise ValueError(f"bad {x}")
        return x

    with pytest.raises(ValueError, match="bad 1"):
        parallel_map(fail_on_odd, range(10), workers=4)


def test_decode_workers_do_not_change_decoded_pixels(tmp_path, make_images):
    images = make_images(7, 24, 16)
    items = []
    for k, image in enumerate(images):
        path = tmp_path / f"{k}.png"
        _pil(image).save(path)
        items.append(image_item(path))
    for workers in (1, 4):
        decoded = decode_items(items, CPU, workers=workers)
        assert all(torch.equal(a, b) for a, b in zip(decoded, images, strict=True))


@pytest.mark.parametrize("resize_mode", ["squash", "shortest_crop"])
@pytest.mark.parametrize("normalise", [False, True])
def test_pil_transform_is_torchvisions_pil_pipeline_bit_for_bit(make_images, resize_mode, normalise):
    """``pil=True`` gives exactly torchvision's Resize (+ CenterCrop) + ToTensor (+ Normalize) on the PIL image,
    for up- and downscaling, square or not; the tensor path does not."""
    mean, std = (open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD) if normalise else (None, None)
    size = 40
    steps = [transforms.Resize((size, size) if resize_mode == "squash" else size, InterpolationMode.BICUBIC)]
    steps += [transforms.CenterCrop(size)] if resize_mode == "shortest_crop" else []
    steps += [transforms.ToTensor()] + ([transforms.Normalize(mean, std)] if normalise else [])
    reference = transforms.Compose(steps)
    ours = ImageTransform(size, resize_mode, InterpolationMode.BICUBIC, mean=mean, std=std, pil=True)
    tensor_path = ImageTransform(size, resize_mode, InterpolationMode.BICUBIC, mean=mean, std=std)
    differs = []
    for height, width in [(24, 24), (30, 52), (97, 61), (40, 40)]:
        batch = torch.stack(make_images(2, height, width, seed=height))
        expected = torch.stack([reference(_pil(image)) for image in batch])
        assert torch.equal(ours(batch), expected), (height, width)
        differs.append(not torch.equal(tensor_path(batch), expected))
    assert any(differs)


def test_pil_transform_takes_only_uint8():
    with pytest.raises(ValueError, match="uint8"):
        ImageTransform(8, pil=True)(torch.zeros(1, 3, 8, 8))


@pytest.mark.parametrize("pil", [False, True])
def test_files_decode_to_what_pil_reads_16_bit_pngs_included(tmp_path, pil):
    """Both decoders give ``Image.open(file).convert("RGB")``: torchvision alone would return uint16 pixels."""
    generator = np.random.default_rng(0)
    images = {
        "gray16.png": Image.fromarray(generator.integers(0, 512, (9, 11), dtype=np.uint16)),
        "palette.png": Image.fromarray(generator.integers(0, 256, (9, 11, 3), dtype=np.uint8)).quantize(8),
        "rgba.png": Image.fromarray(generator.integers(0, 256, (9, 11, 4), dtype=np.uint8), "RGBA"),
        "photo.jpg": Image.fromarray(generator.integers(0, 256, (9, 11, 3), dtype=np.uint8)),
    }
    for name, image in images.items():
        image.save(tmp_path / name)
        (decoded,) = decode_items([image_item(tmp_path / name)], CPU, pil=pil)
        expected = torch.from_numpy(np.array(Image.open(tmp_path / name).convert("RGB"))).permute(2, 0, 1)
        assert decoded.dtype == torch.uint8 and torch.equal(decoded, expected), name


def test_pixel_keys_hash_the_shape_and_every_byte(make_images):
    """Equal pixels in another shape, or one changed byte, give another key."""
    image = make_images(1, 4, 6)[0]
    reshaped = image.reshape(3, 6, 4).clone()
    changed = image.clone()
    changed[2, 3, 5] ^= 1
    keys = {image_item(x).key for x in (image, reshaped, changed)}
    assert len(keys) == 3 and all(key.startswith("px:") and len(key) == 3 + 32 for key in keys)
