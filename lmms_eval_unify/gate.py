"""The gate: every read of bytes we did not write ourselves passes here.

Untrusted bytes are model outputs (records, images), saved samples and results files, release files read by
``data prepare``, data-folder parquet files, judge replies and cache files. The gate refuses, with a typed
:class:`Refused` naming the file and the fix:

* a path that resolves outside the allowed roots (symlinks followed; symlink loops, over-long paths, NUL bytes
  and unencodable names included) — :func:`confine`, :func:`join`;
* anything that is not a regular file (FIFOs, devices, sockets, folders), opened non-blocking so nothing
  waits — :func:`read_bytes`, :func:`check_file`;
* anything over the size limit of its kind (:class:`Limits`) — :func:`read_bytes`, :func:`check_text`,
  :func:`check_count`.

Limits are read from ``$LMMS_EVAL_UNIFY_LIMITS``, a JSON object of :class:`Limits` fields, e.g.
``LMMS_EVAL_UNIFY_LIMITS='{"text_chars": 500000}'``; docs/limits.md says why each default is what it is.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Literal

LIMITS_ENV = "LMMS_EVAL_UNIFY_LIMITS"
_CHUNK = 1024 * 1024
NAME_MAX = 255
"""Longest file name (bytes) of the file systems we run on; a longer one is ``bad_path``."""

Reason = Literal[
    "outside_roots", "bad_path", "missing", "not_regular_file", "too_large", "too_many", "unreadable", "malformed"
]
"""Why the gate refused: the path leaves the allowed roots; the path cannot be resolved (symlink loop, too long,
NUL byte, unencodable); nothing is there; it is not a regular file; it is over its size limit; it holds more
items than its count limit; the OS refused to read it; its content does not parse (not UTF-8, not JSON, wrong
shape)."""

Kind = Literal[
    "text", "record", "judge_reply", "image", "image_pixels", "images", "samples_line", "release_file",
    "data_file", "cache_file", "path",
]  # fmt: skip
"""What is being read; each kind has one limit in :class:`Limits` (see ``LIMIT_OF``)."""


@dataclass(frozen=True)
class Limits:
    """Every size limit of the gate, per kind of input. Change them with ``$LMMS_EVAL_UNIFY_LIMITS``."""

    text_chars: int = 200_000
    """Characters of one model text (an answer, a step's text) before any tokenizer or judge prompt sees it."""
    record_chars: int = 16 * 1024 * 1024
    """Characters of one model output string parsed as a record."""
    images_per_sample: int = 512
    """Images (output images, step images, video frames) one sample may reference; counted before decoding."""
    image_pixels: int = 40_000_000
    """Pixels (width x height) of one image, checked from its header before any pixel is decoded."""
    image_bytes: int = 128 * 1024 * 1024
    """Bytes of one image file."""
    judge_reply_bytes: int = 1024 * 1024
    """Bytes of one judge reply body."""
    samples_line_bytes: int = 256 * 1024 * 1024
    """Bytes of one line of a samples ``.jsonl`` file (one scored sample)."""
    release_file_bytes: int = 4 * 1024**3
    """Bytes of one file of a benchmark release read by ``data prepare`` (annotations, images, videos)."""
    data_file_bytes: int = 64 * 1024**3
    """Bytes of one data-folder file (a task's parquet) or one saved results file."""
    cache_file_bytes: int = 64 * 1024**3
    """Bytes of one cache file (the judge cache)."""
    path_chars: int = 4096
    """Characters of one path (Linux ``PATH_MAX``)."""


LIMIT_OF: dict[str, str] = {
    "text": "text_chars",
    "record": "record_chars",
    "images": "images_per_sample",
    "image_pixels": "image_pixels",
    "image": "image_bytes",
    "judge_reply": "judge_reply_bytes",
    "samples_line": "samples_line_bytes",
    "release_file": "release_file_bytes",
    "data_file": "data_file_bytes",
    "cache_file": "cache_file_bytes",
    "path": "path_chars",
}
"""The :class:`Limits` field that bounds each :data:`Kind`."""


class Refused(Exception):
    """The gate refused an input: ``reason`` (typed), ``subject`` (the file, or what was read), ``detail``
    and ``fix`` (what the user can do). ``str()`` is one line naming all of them."""

    def __init__(self, reason: Reason, subject: object, detail: str, fix: str = "") -> None:
        self.reason: Reason = reason
        self.subject = _printable(subject)
        self.detail = detail
        self.fix = fix
        super().__init__(f"{self.subject}: {detail} ({reason})" + (f"; {fix}" if fix else ""))


def limits() -> Limits:
    """The limits in force: the defaults, overridden by the JSON object in ``$LMMS_EVAL_UNIFY_LIMITS``.
    A malformed value raises ``ValueError`` naming the variable and the valid fields."""
    raw = os.environ.get(LIMITS_ENV, "")
    try:
        return parse_limits(raw)
    except ValueError as exc:
        raise ValueError(f"${LIMITS_ENV} {exc}, got {raw[:200]!r}") from None


@lru_cache(maxsize=8)
def parse_limits(raw: str) -> Limits:
    """``raw``, a JSON object of :class:`Limits` fields, as limits (the defaults for a blank value); else
    ``ValueError`` saying what is expected. The parser of ``$LMMS_EVAL_UNIFY_LIMITS`` in ``env_vars``."""
    if not raw.strip():
        return Limits()
    names = sorted(f.name for f in dataclasses.fields(Limits))
    try:
        values = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"is not JSON ({str(exc)[:100]}); expected an object with keys among {names}") from None
    if not isinstance(values, dict):
        raise ValueError(f"must be a JSON object with keys among {names}")
    if unknown := sorted(set(values) - set(names)):
        raise ValueError(f"has unknown keys {unknown}; the keys are {names}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values.values()):
        raise ValueError("must give every limit as a positive integer")
    return Limits(**values)


def limit(kind: Kind) -> int:
    """The limit in force for ``kind``."""
    return int(getattr(limits(), LIMIT_OF[kind]))


def _raise_fix(kind: Kind) -> str:
    field = LIMIT_OF[kind]
    return f"if such input is legitimate, raise {field} in ${LIMITS_ENV} (now {getattr(limits(), field)})"


def check_count(count: int, kind: Kind, subject: object = "") -> int:
    """``count`` if it is within the limit of ``kind`` (items, pixels, bytes or characters); else ``Refused``
    (``too_many`` for image counts, ``too_large`` otherwise)."""
    bound = limit(kind)
    if count > bound:
        reason: Reason = "too_many" if kind == "images" else "too_large"
        detail = f"{reason.replace('_', ' ')}: {count} > {bound} ({LIMIT_OF[kind]})"
        raise Refused(reason, subject or kind, detail, _raise_fix(kind))
    return count


def check_text(text: str, kind: Kind = "text", subject: object = "") -> str:
    """``text`` unchanged if it is within the character limit of ``kind``; else ``Refused`` (``too_large``).

    Over-long text is refused, never cut: a cut would change what a judge or a tokenizer sees without a trace
    in the score, while a refusal makes the sample a failure whose reason the reports count."""
    check_count(len(text), kind, subject or f"{kind} of {len(text)} characters")
    return text


def confine(path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]], fix: str = "") -> Path:
    """``path`` with every symlink resolved, if it lies inside one of ``roots`` (themselves resolved); else
    ``Refused``: ``outside_roots``, or ``bad_path`` for a symlink loop, an over-long path, a NUL byte or a
    name that does not encode. ``fix`` tells the user how to allow the path (default: the roots)."""
    resolved = _resolved(path)
    allowed = [_resolved(root) for root in roots]
    if not any(resolved.is_relative_to(root) for root in allowed):
        where = ", ".join(map(str, allowed)) or "no allowed folder"
        raise Refused("outside_roots", path, f"resolves to {_printable(resolved)}, outside {where}", fix)
    return resolved


def join(root: str | os.PathLike[str], relative: str) -> Path:
    """``root / relative`` resolved, refused (``outside_roots``) if ``relative`` is absolute or leaves
    ``root`` (``..``, symlinks); ``bad_path`` as in :func:`confine`."""
    if not isinstance(relative, str):
        raise Refused("malformed", repr(relative)[:200], f"a path must be a string, got {type(relative).__name__}")
    if os.path.isabs(relative):
        raise Refused("outside_roots", relative, "absolute path", f"give paths relative to {_printable(root)}")
    return confine(Path(root) / relative, [root], f"give paths that stay inside {_printable(root)}")


def _resolved(path: str | os.PathLike[str]) -> Path:
    text = os.fspath(path)
    if len(text) > limit("path"):
        raise Refused("bad_path", text[:200] + "...", f"path of {len(text)} characters > {limit('path')}")
    try:
        os.fsencode(text)
        resolved = Path(text).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # loop, ENAMETOOLONG, NUL byte, unencodable name
        raise Refused("bad_path", text, f"cannot be resolved: {type(exc).__name__}: {exc}") from None
    if any(len(os.fsencode(part)) > NAME_MAX for part in resolved.parts):
        raise Refused("bad_path", text[:200] + "...", f"a name in the path is over {NAME_MAX} bytes")
    return resolved


def check_file(
    path: str | os.PathLike[str], kind: Kind, roots: Sequence[str | os.PathLike[str]], fix: str = ""
) -> Path:
    """The resolved ``path`` if it is a regular file inside ``roots`` within the byte limit of ``kind``, for
    readers that hand the path to a library (parquet, sqlite); else ``Refused``. Never opens the file."""
    resolved = confine(path, roots, fix)
    try:
        info = os.stat(resolved)
    except OSError as exc:
        raise _os_refusal(exc, path, fix) from None
    _check_regular(info, path, kind)
    return resolved


def _check_regular(info: os.stat_result, path: object, kind: Kind) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise Refused("not_regular_file", path, f"is a {_file_type(info.st_mode)}, not a regular file")
    check_count(info.st_size, kind, f"{_printable(path)} ({info.st_size} bytes)")


def _open_regular(path: Path, original: object, kind: Kind) -> BinaryIO:
    """``path`` opened for reading without blocking (a FIFO never waits) and without following a final
    symlink, after checking it is a regular file within the limit of ``kind``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise _os_refusal(exc, original) from None
    try:
        _check_regular(os.fstat(descriptor), original, kind)
    except Refused:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def read_bytes(
    path: str | os.PathLike[str], kind: Kind, roots: Sequence[str | os.PathLike[str]], fix: str = ""
) -> bytes:
    """The bytes of ``path``: confined to ``roots``, a regular file, at most the byte limit of ``kind``."""
    resolved = confine(path, roots, fix)
    bound = limit(kind)
    with _open_regular(resolved, path, kind) as handle:
        try:
            parts = [handle.read(min(os.fstat(handle.fileno()).st_size, bound) + 1)]
            total = len(parts[0])
            while total <= bound and (chunk := handle.read(min(_CHUNK, bound + 1 - total))):
                parts.append(chunk)  # the file grew since it was checked
                total += len(chunk)
        except OSError as exc:
            raise _os_refusal(exc, path) from None
    check_count(total, kind, f"{_printable(path)} (grew while read)")
    return b"".join(parts)


def read_text(path: str | os.PathLike[str], kind: Kind, roots: Sequence[str | os.PathLike[str]], fix: str = "") -> str:
    """:func:`read_bytes` decoded as UTF-8; undecodable bytes are ``Refused`` (``malformed``), never replaced."""
    data = read_bytes(path, kind, roots, fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused("malformed", path, f"not UTF-8 text (byte {exc.start})") from None


def read_json(
    path: str | os.PathLike[str], kind: Kind, roots: Sequence[str | os.PathLike[str]], fix: str = ""
) -> object:
    """:func:`read_text` parsed as JSON; a parse failure (nesting too deep included) is ``Refused`` (``malformed``)."""
    return parse_json(read_text(path, kind, roots, fix), path)


def parse_json(text: str | bytes, subject: object) -> object:
    """``text`` parsed as JSON, or ``Refused`` (``malformed``) naming ``subject`` — never another exception."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit, nesting
        raise Refused("malformed", subject, f"not valid JSON: {type(exc).__name__}: {str(exc)[:200]}") from None


def jsonl_objects(
    path: str | os.PathLike[str], roots: Sequence[str | os.PathLike[str]], kind: Kind = "samples_line"
) -> Iterator[tuple[int, dict | Refused]]:
    """``(line number, object)`` for each non-empty line of a JSON-lines file, or ``(line number, Refused)``
    for a line that is over the limit of ``kind``, not JSON (a file cut mid-line included) or not an object.
    The file itself is checked (confined, regular) before this returns; a refused file raises ``Refused``."""
    resolved = confine(path, roots)
    handle = _open_regular(resolved, path, "data_file")
    return _jsonl_lines(handle, path, kind)


def _jsonl_lines(handle: BinaryIO, path: object, kind: Kind) -> Iterator[tuple[int, dict | Refused]]:
    bound = limit(kind)
    with handle:
        number = 0
        while True:
            line = handle.readline(bound + 1)
            if not line:
                return
            number += 1
            where = f"{_printable(path)}:{number}"
            if len(line) > bound and not line.endswith(b"\n"):
                while (rest := handle.readline(1024 * 1024)) and not rest.endswith(b"\n"):
                    pass
                yield (
                    number,
                    Refused("too_large", where, f"line over {bound} bytes ({LIMIT_OF[kind]})", _raise_fix(kind)),
                )
                continue
            if not line.strip():
                continue
            try:
                value = parse_json(line, where)
            except Refused as refused:
                cut = "" if line.endswith(b"\n") else " (the file ends mid-line: it was cut)"
                yield number, Refused("malformed", where, refused.detail + cut, refused.fix)
                continue
            if isinstance(value, dict):
                yield number, value
            else:
                yield number, Refused("malformed", where, f"a line must be a JSON object, got {type(value).__name__}")


def _os_refusal(exc: OSError, path: object, fix: str = "") -> Refused:
    """The refusal for an ``OSError`` raised while looking at ``path``."""
    if isinstance(exc, FileNotFoundError):
        return Refused("missing", path, "no such file", fix)
    reason: Reason = "bad_path" if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP) else "unreadable"
    return Refused(reason, path, f"{type(exc).__name__}: {exc.strerror or exc}", fix)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISLNK, "symlink"),
    ):
        if test(mode):
            return name
    return "special file"


def _printable(value: object) -> str:
    """``value`` as text that always encodes as UTF-8 (lone surrogates of undecodable names escaped)."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")
