"""Image encoding for judge requests."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from lmms_eval_unify.judges.images import encode_image


def png(size: tuple[int, int], mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size).save(buffer, format="PNG")
    return buffer.getvalue()


def test_original_bytes_are_kept(tmp_path: Path) -> None:
    data = png((10, 5))
    path = tmp_path / "x.png"
    path.write_bytes(data)
    for source in (data, path, str(path)):
        encoded = encode_image(source)
        assert encoded.data == data and encoded.mime == "image/png"
        assert encoded.data_url.startswith("data:image/png;base64,")
    assert encode_image(data).sha256 == encode_image(path).sha256


def test_resize_and_jpeg() -> None:
    wide = encode_image(png((4000, 100), "RGBA"), "jpeg", max_width=2048)
    decoded = Image.open(io.BytesIO(wide.data))
    assert wide.mime == "image/jpeg" and decoded.format == "JPEG" and decoded.size == (2048, 51)
    small = encode_image(Image.new("RGB", (30, 20)), "original", max_width=2048)
    assert small.mime == "image/png" and Image.open(io.BytesIO(small.data)).size == (30, 20)
