"""lmms-eval's own files of a run, written through the write gate: ``<output_path>/<model>/<date_id>_results.json``
and one ``<date_id>_samples_<task>.jsonl`` per task (lmms-eval 0.7.3's ``EvaluationTracker`` names them so).

lmms-eval writes them with plain ``open`` calls that follow any symlink planted under ``--output_path`` and leave
a half-written results file under its final name when the disk fills. The run hooks
(:mod:`lmms_eval_unify.integration.run_hooks`) replace the local part of its two writers with
:func:`save_results` and :func:`save_samples`: the same bytes, written through :mod:`lmms_eval_unify.writes`
(confined to the real ``--output_path``, no symlink followed below it, the results file atomic, the samples
appended through one ``O_NOFOLLOW`` descriptor). Before the run starts, :func:`run_files` names every file it will
write so the preflight can refuse a symlink there (:func:`lmms_eval_unify.integration.preflight.output_problems`).
Secrets in the model arguments are redacted from the results before they are saved (:func:`redact_model_args`).
"""

from __future__ import annotations

import datetime
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_eval_unify.redaction import redact_secrets
from lmms_eval_unify.writes import WriteRefused, append_text, check_writable, write_text

DATE_FORMAT = "%Y%m%d_%H%M%S"
"""lmms-eval 0.7.3's ``datetime_str`` (``utils.get_datetime_str``); its ``date_id`` replaces ``:`` by ``-``."""
RESULTS_SUFFIX = "_results.json"


def run_root(output_path: str | os.PathLike[str]) -> Path:
    """The real path of ``--output_path``, the root every file of the run is confined to (symlinks in the path the
    user gave are the user's; nothing below it is followed)."""
    return Path(os.path.realpath(output_path))


def model_folder(model_args: object) -> str:
    """The folder below ``--output_path`` lmms-eval 0.7.3 writes a model's files into: the sanitized model name
    its ``GeneralConfigTracker`` reads from the model arguments ("" when they name none, or are not a string)."""
    if not isinstance(model_args, str):
        return ""
    from lmms_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lmms_eval.utils import sanitize_model_name

    return sanitize_model_name(GeneralConfigTracker._get_model_name(model_args))


def results_name(date_id: str) -> str:
    return f"{date_id}{RESULTS_SUFFIX}"


def samples_name(date_id: str, task: str) -> str:
    return f"{date_id}_samples_{task}.jsonl"


def run_files(output_path: str, model_args: object, datetime_str: str | None, tasks: Iterable[str]) -> list[Path]:
    """Every file lmms-eval will write for this run below the real ``--output_path``: the results file and the
    samples file of each of ``tasks`` (none when the run's date is not known yet)."""
    if not datetime_str:
        return []
    folder = run_root(output_path) / model_folder(model_args)
    date_id = datetime_str.replace(":", "-")
    return [folder / results_name(date_id), *(folder / samples_name(date_id, task) for task in tasks)]


def holds_results(folder: Path, date_id: str) -> bool:
    """Whether ``folder`` holds a results file (a regular file, not a symlink) of ``date_id``."""
    try:
        return stat.S_ISREG(os.lstat(folder / results_name(date_id)).st_mode)
    except OSError:
        return False


def media_folders(output_path: str, model_args: object) -> list[Path]:
    """The run's media folder ``<output_path>/unify_media`` when the run writes its media there (no
    ``$LMMS_EVAL_UNIFY_OUTPUT_DIR``, no ``output_dir=`` model argument): a folder below ``--output_path`` like
    lmms-eval's own, so a symlink there is refused too."""
    from lmms_eval_unify.env_vars import read
    from lmms_eval_unify.run.context import MEDIA_SUBDIR, OUTPUT_DIR_ENV

    elsewhere = read(OUTPUT_DIR_ENV) or "output_dir=" in str(model_args or "")
    return [] if elsewhere else [run_root(output_path) / MEDIA_SUBDIR]


def unused_date_id(folder: Path, date_id: str) -> str:
    """``date_id``, or the first second after it whose results file ``folder`` does not hold yet: two runs that
    started in the same second (the second waited for the first's lock) each keep their own files. Anything else
    standing at the name is left for the write gate to refuse."""
    try:
        moment = datetime.datetime.strptime(date_id, DATE_FORMAT)
    except ValueError:
        return date_id
    stamp = date_id
    while holds_results(folder, stamp):
        moment += datetime.timedelta(seconds=1)
        stamp = moment.strftime(DATE_FORMAT)
    return stamp


def task_hashes(samples: dict | None) -> dict[str, str]:
    """lmms-eval 0.7.3's cumulative hash of each task's samples (empty without samples)."""
    from lmms_eval.utils import hash_string

    hashes = {}
    for task_name, task_samples in (samples or {}).items():
        sample_hashes = [f"sample_{index}" + s["doc_hash"] for index, s in enumerate(task_samples)]
        hashes[task_name] = hash_string("".join(sample_hashes))
    return hashes


def save_results(tracker: Any, results: dict, samples: dict | None, datetime_str: str) -> WriteRefused | None:
    """lmms-eval 0.7.3's ``save_results_aggregated`` for a local ``output_path`` (no hub push): the same JSON,
    written atomically through the write gate; sets ``tracker.date_id`` for the samples files (a second after the
    run's date when a results file of that second exists). The refusal, when the gate refused the file; any other
    failure is logged as lmms-eval logs it."""
    from lmms_eval.utils import handle_non_serializable

    tracker.general_config_tracker.log_end_time()
    try:
        logger.info("Saving results aggregated")
        results.update({"task_hashes": task_hashes(samples)})
        results.update(asdict(tracker.general_config_tracker))
        dumped = json.dumps(results, indent=2, default=handle_non_serializable, ensure_ascii=False)
        root = run_root(tracker.output_path)
        folder = root / tracker.general_config_tracker.model_name_sanitized
        tracker.date_id = unused_date_id(folder, datetime_str.replace(":", "-"))
        write_text(folder / results_name(tracker.date_id), dumped, root)
    except WriteRefused as refused:
        return refused
    except Exception as exc:  # noqa: BLE001 - lmms-eval logs a failed save and goes on; so do we
        logger.warning("Could not save results aggregated")
        logger.info(repr(exc))
    return None


def samples_path(tracker: Any, task_name: str) -> Path:
    """Where :func:`save_samples` writes ``task_name``'s samples (below the real ``output_path``)."""
    folder = run_root(tracker.output_path) / tracker.general_config_tracker.model_name_sanitized
    return folder / samples_name(tracker.date_id, task_name)


def sample_line(sample: dict) -> str:
    """One samples row as lmms-eval 0.7.3 writes it (``sample`` changed in place the same way)."""
    from lmms_eval.utils import handle_non_serializable, sanitize_list

    sample["input"] = sample["arguments"][0]
    sample["resps"] = sanitize_list(sample["resps"])
    sample["filtered_resps"] = sanitize_list(sample["filtered_resps"])
    if isinstance(sample["resps"], list) and len(sample["resps"]) == 1:
        sample["resps"] = sample["resps"][0]
    if isinstance(sample["filtered_resps"], list) and len(sample["filtered_resps"]) == 1:
        sample["filtered_resps"] = sample["filtered_resps"][0]
    if sample["resps"] == sample["filtered_resps"]:
        sample.pop("resps")
    elif (
        isinstance(sample["resps"], list)
        and len(sample["resps"]) == 1
        and sample["resps"][0] == sample["filtered_resps"]
    ):
        sample.pop("resps")
    sample["target"] = str(sample["target"])
    sample.pop("arguments")
    sample.pop("doc")
    return json.dumps(sample, default=handle_non_serializable, ensure_ascii=False) + "\n"


def save_samples(tracker: Any, task_name: str, samples: list) -> WriteRefused | None:
    """lmms-eval 0.7.3's ``save_results_samples`` for a local ``output_path`` (no hub push): the same rows,
    appended through the write gate in one write. The refusal, when the gate refused the file; any other failure
    is logged as lmms-eval logs it (the caller counts the rows that reached the file)."""
    try:
        path = samples_path(tracker, task_name)
        text = "".join(sample_line(sample) for sample in samples)
        if text:
            append_text(path, text, run_root(tracker.output_path))
        logger.info(f"Saving samples to {path}")
    except WriteRefused as refused:
        return refused
    except Exception as exc:  # noqa: BLE001 - lmms-eval logs a failed save and goes on; so do we
        logger.warning("Could not save sample results")
        logger.info(repr(exc))
    return None


def count_rows(path: Path, root: Path | None = None) -> int:
    """Complete lines of the regular file ``path`` (0 when it is absent or not a regular file). With ``root``,
    nothing is read through a symlink below it (the write gate's check); the file itself is never a symlink
    followed."""
    try:
        if root is not None:
            check_writable(path, root)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, WriteRefused):
        return 0
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return 0
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def redact_model_args(results: dict, model_args: object, cli_args: object = None) -> None:
    """Redact the model arguments wherever the results show them (``config.model_args`` and
    ``config.resolved_cli_args.model_args``) and in the CLI's arguments (lmms-eval prints them after the run):
    every secret a keyed hash (``redaction.redact_secrets``), so two keys stay two configurations."""
    redacted = redact_secrets(model_args)
    config = results.get("config")
    if isinstance(config, dict):
        if "model_args" in config:
            config["model_args"] = redacted
        resolved = config.get("resolved_cli_args")
        if isinstance(resolved, dict) and "model_args" in resolved:
            resolved["model_args"] = redact_secrets(getattr(cli_args, "model_args", model_args))
    if cli_args is not None and isinstance(getattr(cli_args, "model_args", None), str):
        cli_args.model_args = redact_secrets(cli_args.model_args)  # type: ignore[attr-defined]
