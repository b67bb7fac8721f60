"""Model outputs for the parity benches (not a bench itself): the files a record names, in the forms the
released scripts meet (a saved picture, a named file never written, a file that is not an image)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image


class OutputFiles:
    """Where one model's outputs are written: files the record names by paths relative to ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def file(self, kind: str, picture: Image.Image | None = None) -> str:
        """A file of ``kind``: ``picture`` saved, ``missing`` (named, never written), ``corrupt`` (not an image)."""
        self.count += 1
        name = f"{self.count:05d}.png"
        if kind == "corrupt":
            (self.root / name).write_bytes(b"not a PNG")
        elif kind != "missing":
            picture.save(self.root / name)
        return name
