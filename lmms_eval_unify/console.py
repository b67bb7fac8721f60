"""Terminal output in any locale: what the terminal's encoding cannot show is escaped, never a crash.

Under ``PYTHONIOENCODING=ascii`` or the C locale without UTF-8 mode, ``print("modèle ‡")`` raises
``UnicodeEncodeError`` and the command stops before it writes anything. :func:`tolerate_any_locale` makes such
a stream write ``mod\\xe8le \\u2021`` instead: Python's own choice for stderr, and lossless (two model names
that differ only in an accent stay different, where ``?`` would make them look the same). Files are another
matter: we always write them as UTF-8, whatever the locale.
"""

from __future__ import annotations

import sys
from typing import TextIO

ESCAPES = "backslashreplace"
SAMPLE = "\u2021\xe8"
"""Characters our output holds (the leaderboard's ``‡``, accented model names): a stream that cannot encode
them gets :data:`ESCAPES`."""


def can_encode(stream: TextIO, sample: str = SAMPLE) -> bool:
    """Whether ``stream``'s encoding can write ``sample`` (a stream without an encoding is taken to be able to)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        sample.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def tolerate_any_locale(streams: tuple[TextIO, ...] | None = None) -> None:
    """Reconfigure each of ``streams`` (default stdout and stderr) that cannot encode non-ASCII text to escape
    what it cannot encode; streams that can, or cannot be reconfigured, are left alone."""
    for stream in (sys.stdout, sys.stderr) if streams is None else streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if stream is not None and reconfigure is not None and not can_encode(stream):
            reconfigure(errors=ESCAPES)
