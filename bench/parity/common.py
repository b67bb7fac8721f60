"""What the parity benches of bench/parity/ share: the import hooks and recorder their ``sitecustomize`` installs in
a model environment, the check rows, the result table and the ``NAME: k/n identical`` line.

Not a bench: run one with ``python bench/adapter_parity.py --model NAME ...`` (see that file). Each bench loads this
file by its path (it is also loaded that way inside model environments, where neither this repository nor its
dependencies are importable), so only the standard library is imported here at module level (numpy where used).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple


class Check(NamedTuple):
    """One row of a bench's result: its name, whether ours and the official output are identical, the detail."""

    name: str
    identical: bool
    detail: str


# ---------------------------------------------------------------------------------------------------------------
# Model environment side: interception of the official modules
# ---------------------------------------------------------------------------------------------------------------


class Recorder:
    """Writes records to a folder: arrays as numbered ``.npy`` files, the rest as one JSON line each."""

    def __init__(self, folder: Path, digits: int = 3) -> None:
        self.folder, self.digits = folder, digits
        folder.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def array(self, name: str, value: Any) -> str:
        """Saves ``value`` as the next ``NNN-name.npy``; returns the file's name."""
        import numpy as np

        self.count += 1
        file = f"{self.count:0{self.digits}d}-{name}.npy"
        np.save(self.folder / file, np.asarray(value))
        return file

    def event(self, name: str, **fields: Any) -> None:
        with (self.folder / "events.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps({"event": name, **fields}) + "\n")


class PatchingLoader(importlib.abc.Loader):
    """Runs a module with its own loader, then ``patch(module)``."""

    def __init__(self, loader: Any, patch: Callable[[types.ModuleType], None]) -> None:
        self.loader, self.patch = loader, patch

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)


class PostImportHooks(importlib.abc.MetaPathFinder):
    """Calls ``patches[name](module)`` once the module ``name`` has been executed (before anyone imports from
    it), leaving the module's file untouched."""

    def __init__(self, patches: dict[str, Callable[[types.ModuleType], None]]) -> None:
        self.patches = patches

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = PatchingLoader(spec.loader, self.patches.pop(name))
                return spec
        return None


def write_sitecustomize(folder: Path, module_name: str, bench: Path, install: str) -> None:
    """Writes ``folder/sitecustomize.py``, which loads ``bench`` by its path as ``module_name`` and calls its
    ``install()`` in every Python process that has ``folder`` on its ``PYTHONPATH``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.util as _u, sys as _sys\n"
        f"_s = _u.spec_from_file_location({module_name!r}, {str(bench.resolve())!r})\n"
        "_m = _sys.modules[_s.name] = _u.module_from_spec(_s)\n"
        "_s.loader.exec_module(_m)\n"
        f"_m.{install}()\n"
    )


def sitecustomize_path(folder: Path, module_name: str, bench: Path, install: str) -> str:
    """:func:`write_sitecustomize`; returns ``PYTHONPATH`` with ``folder`` first."""
    write_sitecustomize(folder, module_name, bench, install)
    return os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH", "")]))


# ---------------------------------------------------------------------------------------------------------------
# Evaluator side: running the official code, comparison, the result
# ---------------------------------------------------------------------------------------------------------------


def git_commit(checkout: Path) -> str:
    """The commit a checkout is at (``unknown (not a git checkout)`` where git cannot tell)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.strip()
    return "unknown (not a git checkout)"


def run_logged(what: str, command: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    """Runs ``command`` with its output in ``log``; its wall seconds. A failure exits with the log's tail."""
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{what} failed (exit {done.returncode}); log {log}:\n{tail}")
    return seconds


@contextlib.contextmanager
def environ_changed(updates: dict[str, str], removed: Iterable[str] = ()) -> Iterator[None]:
    """``os.environ`` with ``updates`` and without ``removed`` inside; as it was after."""
    saved = dict(os.environ)
    os.environ.update(updates)
    for key in removed:
        os.environ.pop(key, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ---------------------------------------------------------------------------------------------------------------
# Evaluator side: comparison and the result
# ---------------------------------------------------------------------------------------------------------------


def first_difference(a: Any, b: Any) -> int:
    """Index of the first differing element of two sequences; the shorter length where one is a prefix of the
    other (or both are equal)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def print_checks(rows: Iterable[tuple[str, bool, str]]) -> None:
    """The result table: ``check  identical  detail``, one row a check."""
    rows = list(rows)
    width = max(len(name) for name, _, _ in rows)
    print(f"{'check'.ljust(width)}  identical  detail")
    for name, same, detail in rows:
        print(f"{name.ljust(width)}  {'yes' if same else 'NO':<9}  {detail}")


def verdict(model: str, rows: Iterable[tuple[str, bool, str]]) -> str:
    """A bench's last line: ``NAME: k/n identical``."""
    rows = list(rows)
    return f"{model}: {sum(bool(same) for _, same, _ in rows)}/{len(rows)} identical"


def main(argv: list[str] | None = None) -> int:
    print(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
