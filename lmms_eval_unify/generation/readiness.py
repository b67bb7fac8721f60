"""What a model adapter needs before it can be built (its code, its weights, its device, its credentials),
checked without building or loading anything, so the run preflight lists every missing piece in one round.

An adapter declares the check by overriding :meth:`UnifiedModel.missing` with the helpers here:
:func:`missing_code` (an importable package and the names it must export), :func:`missing_weights` (a local
folder, or a Hugging Face repository already in the cache, or downloadable when the Hub is reachable),
:func:`missing_device` (the requested device exists) and :func:`missing_env` (a credential variable is set).
Each item found missing says what it is and how to supply it (:class:`Missing`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Missing:
    """One thing a model needs that this machine lacks: ``kind`` (code, weights, device, credentials), what
    exactly, and how to supply it."""

    kind: str
    what: str
    fix: str


def missing_code(model_id: str, module: str, names: tuple[str, ...] = (), install: str = "") -> list[Missing]:
    """``module`` importable and exporting ``names`` (found by importing the module, nothing more)."""
    fix = install or f"pip install {module.split('.')[0]}"
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return [Missing("code", f"{model_id} needs the Python package {module!r}, which is not installed", fix)]
    try:
        imported = importlib.import_module(module)
        absent = [name for name in names if not hasattr(imported, name)]
    except Exception as exc:  # noqa: BLE001 - a package that fails to import is missing code, whatever the error
        return [Missing("code", f"{model_id}: importing {module} fails ({type(exc).__name__}: {exc})", fix)]
    if absent:
        version = getattr(imported, "__version__", "unknown version")
        what = f"{model_id} needs {', '.join(absent)} from {module}, which version {version} does not have"
        return [Missing("code", what, fix)]
    return []


def missing_weights(
    model_id: str,
    location: str | None,
    *,
    argument: str = "pretrained",
    files: tuple[str, ...] = ("config.json",),
    env_var: str | None = None,
) -> list[Missing]:
    """The weights named by the ``argument`` model argument: a local folder holding ``files``, or a Hugging Face
    repository id whose snapshot in the cache holds them. A repository not in the cache is missing only when the
    Hub is offline (``HF_HUB_OFFLINE``): online, building the model downloads it."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    alternatives = f"--model_args {argument}=<folder>" + (f" or set {env_var}=<folder>" if env_var else "")
    if not location:
        return [Missing("weights", f"{model_id}: no weights given ({argument} is empty)", f"pass {alternatives}")]
    local = Path(location).expanduser()
    if local.exists() or location.startswith(("/", ".", "~")):
        return _folder_lacks(model_id, local, files, f"pass {alternatives} (a folder holding {', '.join(files)})")
    try:
        snapshot = Path(snapshot_download(location, local_files_only=True))
    except HFValidationError:
        return [
            Missing(
                "weights",
                f"{model_id}: {argument}={location!r} is neither an existing folder nor a Hugging Face repository id",
                f"pass {alternatives}",
            )
        ]
    except (LocalEntryNotFoundError, OSError):
        if not constants.HF_HUB_OFFLINE:
            return []
        expected = Path(constants.HF_HUB_CACHE) / f"models--{location.replace('/', '--')}"
        return [
            Missing(
                "weights",
                f"{model_id} weights {location!r} are not in the Hugging Face cache (looked in {expected}) and "
                "the Hub is offline (HF_HUB_OFFLINE=1)",
                f"`hf download {location}` on a machine with access (into $HF_HOME, now {constants.HF_HOME}), "
                f"or set HF_HOME to the cache that holds them, or pass {alternatives}",
            )
        ]
    return _folder_lacks(model_id, snapshot, files, f"`hf download {location}` again, or pass {alternatives}")


def _folder_lacks(model_id: str, folder: Path, files: tuple[str, ...], fix: str) -> list[Missing]:
    if not folder.is_dir():
        return [Missing("weights", f"{model_id}: weights folder {folder} does not exist", fix)]
    absent = [name for name in files if not (folder / name).exists()]
    if absent:
        return [Missing("weights", f"{model_id}: weights folder {folder} lacks {', '.join(absent)}", fix)]
    damaged = [(name, weight_file_problem(folder / name)) for name in files]
    return [Missing("weights", f"{model_id}: {folder / name} {problem}", fix) for name, problem in damaged if problem]


TORCH_FILE_MAGIC = (b"PK\x03\x04", b"\x80")
"""How a torch checkpoint starts: a zip archive (``torch.save`` since 1.6) or a pickle (older files)."""
TORCH_SUFFIXES = (".pth", ".pt", ".bin", ".ckpt")


def weight_file_problem(path: Path) -> str | None:
    """Why the weights file at ``path`` cannot be loaded, read from its first bytes only: missing, empty, or not
    the format its suffix names (a torch checkpoint, a safetensors file, JSON); ``None`` when it looks loadable."""
    if not path.is_file():
        return "does not exist (or is not a file)"
    size = path.stat().st_size
    if size == 0:
        return "is empty (0 bytes)"
    with path.open("rb") as handle:
        head = handle.read(16)
    if path.suffix in TORCH_SUFFIXES and not head.startswith(TORCH_FILE_MAGIC):
        return f"is not a torch checkpoint (it starts with {head[:8]!r})"
    if path.suffix == ".safetensors":
        header = int.from_bytes(head[:8], "little") if len(head) >= 8 else 0
        if len(head) < 9 or head[8:9] != b"{" or header + 8 > size:
            return "is not a safetensors file (its header is damaged or the file is cut short)"
    if path.suffix == ".json" and head.lstrip()[:1] not in (b"{", b"["):
        return "is not JSON"
    return None


def missing_weight_file(model_id: str, location: str | None, argument: str, what: str) -> list[Missing]:
    """The single weights file the ``argument`` model argument names (``what`` it is and where it comes from)
    exists and looks loadable (:func:`weight_file_problem`)."""
    fix = f"download it and pass --model_args {argument}=<file>"
    if not location:
        return [Missing("weights", f"{model_id} needs {what}, and {argument} is not given", fix)]
    problem = weight_file_problem(Path(location).expanduser())
    if problem:
        return [Missing("weights", f"{model_id} needs {what}: {argument}={location!r} {problem}", fix)]
    return []


def missing_device(model_id: str, device: str | None, *, needs_cuda: bool = False) -> list[Missing]:
    """The requested ``device`` (``cuda``, ``cuda:N``, ``mps``, ``cpu``; ``None``: the GPU if any, else the CPU)
    exists; with ``needs_cuda``, a CUDA GPU is visible whatever was requested."""
    import torch

    try:
        requested = torch.device(device) if device else None
    except (RuntimeError, ValueError):
        return [Missing("device", f"{model_id}: {device!r} is not a device", "pass --device cuda, cuda:N, mps or cpu")]
    kind = requested.type if requested is not None else None
    cuda_wanted = needs_cuda or kind == "cuda"
    if cuda_wanted and not torch.cuda.is_available():
        what = (
            f"{model_id} needs a CUDA GPU" if needs_cuda else f"{model_id}: device {device!r} was requested"
        ) + f", but torch {torch.__version__} sees none (CUDA build: {torch.version.cuda or 'no'})"
        fix = "run on a machine with an NVIDIA GPU and a CUDA build of torch"
        return [Missing("device", what, fix if needs_cuda else f"{fix}, or pass --device cpu")]
    index = requested.index if requested is not None and kind == "cuda" else None
    if index is not None and index >= torch.cuda.device_count():
        what = f"{model_id}: device {device!r} was requested, but {torch.cuda.device_count()} GPU(s) are visible"
        return [Missing("device", what, "pass --device cuda (this process's GPU) or an index that exists")]
    if kind == "mps" and not torch.backends.mps.is_available():
        what = f"{model_id}: device 'mps' was requested, but it is not available"
        return [Missing("device", what, "pass --device cpu")]
    return []


def missing_env(model_id: str, variable: str, what: str, argument: str) -> list[Missing]:
    """The environment variable ``variable`` (holding ``what``, e.g. an API key) is set and not empty."""
    if os.environ.get(variable):
        return []
    return [
        Missing(
            "credentials",
            f"{model_id} reads {what} from ${variable}, which is not set",
            f"export {variable}=... (or name another variable with --model_args {argument}=NAME)",
        )
    ]


def model_missing(model_class: Any, model_args: dict[str, Any]) -> list[Missing]:
    """What ``model_class`` (a ``UnifiedModel`` subclass) lacks to be built with ``model_args`` (the values
    lmms-eval would pass to its constructor); ``ModelArgumentError`` when the arguments themselves are wrong."""
    settings = model_class.settings_class.from_model_args(model_class.model_id, model_args)
    return list(model_class.missing(settings))
