"""What a run records about the software that made it and the data it read.

A run stamps :func:`run_provenance` into its results file under :data:`PROVENANCE_KEY`: the version of
lmms-eval-unify and the commit of the git checkout it runs from, the installed lmms-eval's version (lmms-eval's
own ``lmms_eval_version`` field is the branch and commit of the git checkout the run started in, not its
version), and under ``data`` each task's data source; ``lmms-eval-unify leaderboard`` writes the software of
itself into every ``manifest.json``, beside each row's full recipe.

A data source is one of: ``hub`` (the Hub repository, its config name, the revision asked, '' for the default
branch), ``prepared`` (a local copy that ``data prepare`` converted from the published release, named by its
path), ``generated`` (offline data of ``data generate``: its seed and items per subtask) or ``unknown`` (local
files no ``data prepare``/``data generate`` record covers); each with the loaded dataset's fingerprint (the
``datasets`` library's). The local commands leave a :data:`DATA_SOURCE_FILE` in every folder they write; a
task's files take the record nearest above them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

from lmms_eval_unify import gate
from lmms_eval_unify.metrics.switches import tiny_metrics_on
from lmms_eval_unify.writes import write_text

PACKAGE = "lmms-eval-unify"
PROVENANCE_KEY = "lmms_eval_unify"
"""The results-file key under which a run records :func:`run_provenance`."""


DATA_SOURCE_FILE = "data_source.json"
"""The record, in a local data folder, of where the files under it came from (``data generate``/``data prepare``)."""
HUB, PREPARED, GENERATED, UNKNOWN = "hub", "prepared", "generated", "unknown"
"""The kinds of data source (the ``kind`` of a source record)."""
NOT_PUBLISHED = (GENERATED, UNKNOWN)
"""Kinds of data not known to be the published dataset: cells read from them are not comparable."""
_data_sources: dict[str, dict[str, object]] = {}
"""Task -> the data source its last loading in this process read (:func:`record_data_source`)."""


def run_provenance(tasks: Collection[str] = ()) -> dict[str, object]:
    """``{"version", "commit", "lmms_eval", "tiny_metrics"}``: the running lmms-eval-unify (the commit is the git
    checkout's HEAD it runs from, '' for an installed wheel), the installed lmms-eval's version and whether the
    tiny-metrics switch is on; with `tasks`, ``data``: the data source each of them read in this process (a task
    that loaded no data here is left out)."""
    stamp: dict[str, object] = {**software(), "tiny_metrics": tiny_metrics_on()}
    if tasks:
        stamp["data"] = {task: _data_sources[task] for task in tasks if task in _data_sources}
    return stamp


@cache
def software() -> dict[str, str]:
    """``{"version", "commit", "lmms_eval"}`` of the running lmms-eval-unify, and lmms-eval's version."""
    return {
        "version": installed_version(PACKAGE),
        "commit": checkout_commit(Path(__file__).resolve().parents[2] / ".git"),
        "lmms_eval": installed_version("lmms-eval"),
    }


def installed_version(distribution: str) -> str:
    """The installed version of `distribution` (``importlib.metadata``), '' when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def record_data_source(task: str, source: Mapping[str, object], fingerprint: str) -> None:
    """Note that `task` read `source` (a source record), whose loaded dataset has `fingerprint`."""
    _data_sources[task] = {**source, "fingerprint": fingerprint}


def hub_source(repo: str, name: str | None, revision: str | None) -> dict[str, object]:
    """The source record of a Hub dataset: its repository, config name and revision ('' for the default)."""
    return {"kind": HUB, "repo": repo, "name": name or "", "revision": revision or ""}


def configured_source(dataset_path: str, name: str | None, dataset_kwargs: Mapping | None) -> dict[str, object]:
    """The source record of the dataset a task's YAML names: a Hub repository, or ``parquet`` files, which are a
    Hub repository's when all are ``hf://datasets/<owner>/<name>[@revision]/…`` URLs of one (else unknown)."""
    kwargs = dataset_kwargs or {}
    if dataset_path != "parquet":
        return hub_source(dataset_path, name, kwargs.get("revision"))
    files = data_file_list(kwargs.get("data_files"))
    repos = {(m["repo"], m["revision"]) if (m := HUB_FILE.match(f)) else None for f in files}
    if len(repos) == 1 and (repo := repos.pop()) is not None:
        return {**hub_source(repo[0], name, repo[1]), "files": [HUB_FILE.sub("", f) for f in files]}
    return _unknown(", ".join(files), "parquet files that are not of one Hub repository")


HUB_FILE = re.compile(r"^hf://datasets/(?P<repo>[^/@]+/[^/@]+)(?:@(?P<revision>[^/]+))?/")
"""A file of a Hub dataset repository as ``datasets`` names it."""


def data_file_list(data_files: object) -> list[str]:
    """Every file a ``data_files`` argument names (a path, a list of them, or a map of splits to either)."""
    if isinstance(data_files, Mapping):
        return [f for value in data_files.values() for f in data_file_list(value)]
    if isinstance(data_files, str | os.PathLike):
        return [str(data_files)]
    return [str(f) for f in data_files] if isinstance(data_files, Iterable) else []


def generated_source(seed: int, n: int) -> dict[str, object]:
    """The source record of ``data generate --seed seed --n n``, with the software that generated it."""
    return {"kind": GENERATED, "seed": seed, "n": n, "by": software()}


def prepared_source(release: Path, repo: str = "") -> dict[str, object]:
    """The source record of ``data prepare`` from the published release at `release` (a snapshot of the Hub
    repository `repo`, when it is one), with the software that converted it."""
    return {"kind": PREPARED, "release": str(release), **({"repo": repo} if repo else {}), "by": software()}


def write_data_source(folder: Path, source: Mapping[str, object], root: Path) -> Path:
    """Write `source` as the :data:`DATA_SOURCE_FILE` of `folder` through the write gate (confined to `root`)."""
    return write_text(folder / DATA_SOURCE_FILE, json.dumps(source, indent=1, sort_keys=True) + "\n", root)


def mark_local_data(files: Iterable[Path], source: Mapping[str, object], root: Path) -> list[Path]:
    """Write `source` as the record of every folder holding one of the parquet `files` (inside `root`); returns
    the records written."""
    folders = sorted({Path(file).parent for file in files if Path(file).suffix == ".parquet"})
    return [write_data_source(folder, source, root) for folder in folders]


def local_source(files: Sequence[Path], root: Path) -> dict[str, object]:
    """Where the local data `files` (one at least, under the data folder `root`) came from: the record nearest
    above each, read through the gate; the first that is generated or unknown when they differ, else the first."""
    sources = [_nearest_source(Path(file), Path(root)) for file in files]
    return next((s for s in sources if s["kind"] in NOT_PUBLISHED), sources[0])


def _nearest_source(file: Path, root: Path) -> dict[str, object]:
    """The :data:`DATA_SOURCE_FILE` record in the folder of `file` or the nearest above it inside `root`."""
    relative = os.path.relpath(file, root)
    for folder in file.parents:
        if os.path.relpath(folder, root).startswith(os.pardir):
            break
        if os.path.lexists(folder / DATA_SOURCE_FILE):
            try:
                source = gate.read_json(folder / DATA_SOURCE_FILE, "data_file", [root])
            except gate.Refused as refused:
                return _unknown(relative, str(refused))
            if isinstance(source, dict) and source.get("kind") in (GENERATED, PREPARED):
                return {**source, "file": relative}
            return _unknown(relative, f"{folder / DATA_SOURCE_FILE} is not a data source record")
    return _unknown(relative, f"no {DATA_SOURCE_FILE} in its folder or above it")


def _unknown(file: object, why: str) -> dict[str, object]:
    """The source record of local data that no record covers."""
    return {"kind": UNKNOWN, "file": str(file), "why": why}


def checkout_commit(git_dir: Path) -> str:
    """The commit HEAD names in a git directory, read from its files (no git process); '' when unreadable."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head
        ref = head.removeprefix("ref: ")
        loose = git_dir / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip()
        for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit
    except (OSError, UnicodeDecodeError):
        pass
    return ""
