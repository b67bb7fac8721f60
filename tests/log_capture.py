"""What loguru logs while a block runs, for tests that assert on warnings and errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from loguru import logger


@contextmanager
def logged(level: str) -> Iterator[list[str]]:
    """The messages (text only) logged at ``level`` or above inside the block, in order."""
    caught: list[str] = []
    sink = logger.add(lambda message: caught.append(str(message).rstrip("\n")), level=level, format="{message}")
    try:
        yield caught
    finally:
        logger.remove(sink)
