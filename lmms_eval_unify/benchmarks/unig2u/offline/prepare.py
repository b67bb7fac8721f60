"""``lmms-eval-unify data prepare unig2u --snapshot DIR --out DIR``: the files of every implemented subtask
from a downloaded snapshot of the Hub dataset ``kkv233/unig2u_dataset``, checked against the paper's sizes,
into the local-data layout."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import datasets

from lmms_eval_unify.data.release import Problems, Release, report, write_all_or_nothing
from lmms_eval_unify.run.provenance import prepared_source


def prepare(snapshot: str | Path, out_dir: str | Path) -> tuple[list[Path], list[str]]:
    """Copy the files of every implemented subtask from a downloaded snapshot of ``kkv233/unig2u_dataset``
    into ``<out>/unig2u/`` (same relative paths), after checking that every file is there, readable, and that
    each subtask has the paper's number of rows. Returns (copied files, problems); nothing is copied when
    there is any problem."""
    from lmms_eval_unify.benchmarks.unig2u.spec import HUB_REPO, SUBTASKS

    snapshot, root = Path(snapshot), Path(out_dir) / "unig2u"
    release = Release(snapshot)
    problems = Problems()
    files: set[str] = set()
    for subtask in SUBTASKS.values():
        rows = 0
        with problems.guard(subtask.name):
            for relative in subtask.files:
                source = release.find(relative)  # a regular file inside the snapshot, else gate.Refused
                if source is None:
                    raise FileNotFoundError(
                        f"{snapshot / relative} is missing: download kkv233/unig2u_dataset into {snapshot}"
                    )
                table = datasets.Dataset.from_parquet(str(source))
                rows += sum(t == subtask.doc_type for t in table["type"]) if subtask.doc_type else table.num_rows
                files.add(relative)
            if rows != subtask.n:
                raise ValueError(f"{rows} rows in {subtask.files}, the paper has {subtask.n}")
    if problems:
        return [], problems
    by_folder: dict[str, list[str]] = {}
    for relative in sorted(files):
        by_folder.setdefault(Path(relative).parts[0], []).append(relative)
    writers = {folder: functools.partial(_copy_files, snapshot, folder, names) for folder, names in by_folder.items()}
    write_all_or_nothing(root, writers, prepared_source(snapshot.resolve(), HUB_REPO))
    return [root / relative for relative in sorted(files)], []


def _copy_files(snapshot: Path, folder: str, names: list[str], staging: Path) -> None:
    for relative in names:
        target = staging / Path(relative).relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(snapshot / relative, target)


def prepare_main(argv: list[str]) -> int:
    """``lmms-eval-unify data prepare unig2u --snapshot DIR --out DIR``."""
    import argparse

    parser = argparse.ArgumentParser(prog="lmms-eval-unify data prepare unig2u", description=prepare.__doc__)
    parser.add_argument("--snapshot", required=True, help="local copy of the Hub dataset kkv233/unig2u_dataset")
    parser.add_argument("--out", required=True, help="LMMS_EVAL_UNIFY_DATA_DIR to write")
    args = parser.parse_args(argv)
    copied, problems = prepare(args.snapshot, args.out)
    for path in copied:
        print(path)
    return report(problems)
