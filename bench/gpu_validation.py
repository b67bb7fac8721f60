"""GPU validation for the first lent GPU (issue 30 item 6): one table of the checks that need a GPU.

Two commands. Here, once, with PyPI reachable (the device machine has no network)::

    .venv/bin/python bench/gpu_validation.py prepare [--into .whl] [--with-official MODEL --official-root DIR]

builds this package as a wheel and downloads, as CPython 3.12 manylinux wheels, every package the run imports
that the device image lacks (or holds at a version our requirements exclude), into the git-ignored ``.whl/``,
and fails if that and the working tree exceed the device tool's 64 MiB. Then, on the device (the tool call)::

    run(command="bash bench/gpu_validation.sh", carry=[".whl"], timeout_s=540)

which is ``python3 bench/gpu_validation.py run --device cuda --out $OUT``: it installs ``.whl/*.whl`` into
``/tmp/site`` (``pip install --no-index --no-deps --target``), runs the children on an interpreter that sees it
before the image's own packages (:func:`overlay_python`), each step a subprocess with its own time limit (under
8 minutes in all on one H100), and prints ONE
table (step, device, figure, status), also written to ``$OUT/gpu_validation.{md,json}`` with the steps' output
in ``$OUT/gpu_validation.log``. A failed or skipped step is a row that says why. On a CPU, with tiny sizes (a
couple of minutes; tests/test_bench_scripts.py runs it)::

    python bench/gpu_validation.py run --device cpu --smoke [--out DIR]

Steps: the batched-versus-single generation ratio (``generation_bench.py --primitive``, Janus-Pro-1B's shape
with random weights), CLIP-I images/s (``metrics_bench.py --backbones full``; its other metrics are kept in the
JSON), and each adapter's tiny-weight parity bench (``bench/parity/qwen_image_edit.py --device cuda``; the
official-code ones only when ``prepare --with-official`` carried their checkout and pinned wheels, and they run
wherever the bench puts them: most have no device option).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
PACKAGE = "lmms-eval-unify"

# ---------------------------------------------------------------------------------------------------------------
# What the device machine holds (/work/.library/device/KINDS.md)

DEVICE_PACKAGES_DATE = "2026-11-17"
"""When KINDS.md's list of the device image's Python packages ('cuda' image of nvidia-h100-x1/nvidia-h200) was read."""
DEVICE_PACKAGES = frozenset(
    """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
    certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
    cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
    flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
    huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin
    jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax
    llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack
    multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
    nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
    nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
    nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
    opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec
    patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
    py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
    pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu
    scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools
    shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server
    tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric
    torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3
    uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split()
)
DEVICE_VERSIONS = {
    "accelerate": "1.15.0", "botorch": "0.18.1", "cupy-cuda13x": "14.2.0", "gpytorch": "1.15.2",
    "huggingface-hub": "1.33.0", "jax": "0.11.2", "jaxlib": "0.11.2", "jaxtyping": "0.3.11", "numpy": "2.5.2",
    "numpyro": "0.21.0", "onnx": "1.23.1", "onnxruntime": "1.30.0", "pytorch-lightning": "2.6.6",
    "safetensors": "0.8.0", "sentence-transformers": "6.0.1", "sentencepiece": "0.2.2", "tiktoken": "0.14.0",
    "tokenizers": "0.23.2", "torch": "2.11.0", "torchaudio": "2.11.0", "torchdiffeq": "0.2.5",
    "torchmetrics": "1.9.0", "torchvision": "0.26.0", "transformers": "5.17.0", "triton": "3.6.0",
}  # fmt: skip
"""Versions KINDS.md's 'pip list' row gives (2026-11; safetensors is there although its name list omits it)."""
DEVICE_ENVIRONMENT = {
    "implementation_name": "cpython", "implementation_version": "3.12.3", "os_name": "posix",
    "platform_machine": "x86_64", "platform_python_implementation": "CPython", "platform_release": "",
    "platform_system": "Linux", "platform_version": "", "python_full_version": "3.12.3", "python_version": "3.12",
    "sys_platform": "linux",
}  # fmt: skip
"""Environment markers of the device's python3 (Python 3.12.3, x86-64 Linux) for Requires-Dist."""
PLATFORMS = ("manylinux2014_x86_64", "manylinux1_x86_64", *(f"manylinux_2_{n}_x86_64" for n in range(5, 40)))
"""Wheel platforms the device takes (its glibc is at least 2.39: pip matches each tag exactly)."""
BUDGET_BYTES = 64 * 2**20
"""What travels in one call: the working tree (tracked and untracked-not-ignored files) and the carried paths."""

NOT_NEEDED = {
    # lmms-eval 0.7.3 declares these; no step imports them (read off the steps' imports here, 2026-11-28:
    # `import lmms_eval` and our adapters, metrics and parity benches). wandb is imported only optionally
    # (timm/utils/summary.py: try/except ImportError).
    "av", "hf-transfer", "jsonlines", "latex2sympy2", "math-verify", "nltk", "openai", "openpyxl", "pre-commit",
    "pycocoevalcap", "pytablewriter", "python-dotenv", "qwen-vl-utils", "ruff", "sqlitedict",
    "tqdm-multiprocess", "transformers-stream-generator", "wandb", "yt-dlp", "zss", "sentence-transformers",
    # ours: SVG rendering, the Gap Score fit and scikit-image's sample photos are not on any step's path
    "cairosvg", "pyro-ppl",
}  # fmt: skip
"""Declared requirements that ``prepare`` does not carry (each named in its report)."""
FORCE_CARRY: tuple[str, ...] = ("transformers",)
"""Present on the device but carried at this venv's version anyway (``prepare --carry NAME`` adds to it).
transformers: the device's 5.17 fails our janus_pro adapter (``GenerationMixin._prepare_static_cache() missing 1
required positional argument: 'prefill_chunk_size'``, tried here on 2026-11-28 with 5.17.0 and huggingface-hub
1.33.0 over this venv); 5.24 (constraints of this venv) passes with the device's huggingface-hub 1.33. Its import-time
version checks (regex>=2025.10.22, tqdm>=4.60, ...) are the same as 5.17's, which the image's pip resolved."""

# ---------------------------------------------------------------------------------------------------------------
# The requirement closure (pure: the metadata comes from a function)


def canonical(name: str) -> str:
    """PEP 503 normalised name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def has_upper_bound(specifier) -> bool:
    """Whether ``specifier`` (a packaging SpecifierSet) caps the version: an unknown device version may miss it."""
    return any(spec.operator in ("<", "<=", "==", "===", "~=") for spec in specifier)


@dataclass
class Closure:
    """What a set of root requirements needs on the device."""

    carry: dict[str, str] = field(default_factory=dict)
    """name -> version to carry as a wheel."""
    present: dict[str, str] = field(default_factory=dict)
    """name -> why the device's own copy is used."""
    pruned: dict[str, list[str]] = field(default_factory=dict)
    """name -> who requires it (in :data:`NOT_NEEDED`: not carried)."""
    required_by: dict[str, set[str]] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    """A requirement seen after its version was chosen that excludes that version."""


Metadata = Callable[[str, object], tuple[str, list[str]]]
"""(name, SpecifierSet) -> (version chosen, its Requires-Dist lines)."""


def closure(
    roots: Iterable[str],
    metadata: Metadata,
    present: Mapping[str, str | None],
    environment: Mapping[str, str] = DEVICE_ENVIRONMENT,
    prune: Iterable[str] = (),
    force: Iterable[str] = (),
) -> Closure:
    """Every distribution that ``roots`` (requirement strings) need, through Requires-Dist with markers evaluated
    in ``environment`` (and ``extra`` set to each extra asked for), split into what to carry and what the device
    has. ``present``: the device's packages, by canonical name, with their version or None when unknown; a
    present package is used as it is when its version satisfies every requirement seen (when unknown: unless a
    requirement caps the version), else it is carried. ``prune``: names never carried nor followed. ``force``:
    present names carried anyway."""
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    prune, force = {canonical(n) for n in prune}, {canonical(n) for n in force}
    present = {canonical(name): version for name, version in present.items()}
    result = Closure()
    specifiers: dict[str, SpecifierSet] = {}
    requires: dict[str, list[str]] = {}
    expanded: dict[str, set[str]] = {}
    queue: deque[tuple[Requirement, str]] = deque((Requirement(root), "(root)") for root in roots)
    while queue:
        requirement, parent = queue.popleft()
        name = canonical(requirement.name)
        specifiers[name] = specifiers.get(name, SpecifierSet()) & requirement.specifier
        spec = specifiers[name]
        result.required_by.setdefault(name, set()).add(parent)
        if name in prune:
            result.pruned.setdefault(name, []).append(parent)
            continue
        if name not in result.carry and name in present and name not in force:
            version = present[name]
            if version is None and not has_upper_bound(spec):
                result.present[name] = f"version unknown, assumed to satisfy '{spec}'" if str(spec) else "any version"
                continue
            if version is not None and spec.contains(version, prereleases=True):
                result.present[name] = f"{version} satisfies '{spec}'" if str(spec) else version
                continue
            result.present.pop(name, None)  # carried instead: a requirement excludes (or may exclude) its version
        if name in result.carry:
            if not spec.contains(result.carry[name], prereleases=True):
                result.conflicts.append(f"{name} {result.carry[name]} chosen, but {parent} requires '{spec}'")
        else:
            result.carry[name], requires[name] = metadata(name, spec)
        for extra in ({""} | {canonical(e) for e in requirement.extras}) - expanded.setdefault(name, set()):
            expanded[name].add(extra)
            for line in requires[name]:
                dependency = Requirement(line)
                marker = dependency.marker
                if (marker is None and not extra) or (
                    marker is not None and marker.evaluate({**environment, "extra": extra})
                ):
                    queue.append((dependency, f"{name}[{extra}]" if extra else name))
    return result


def device_present() -> dict[str, str | None]:
    """The device's packages with their versions where known."""
    names = set(DEVICE_PACKAGES) | set(DEVICE_VERSIONS)
    return {name: DEVICE_VERSIONS.get(name) for name in names}


# ---------------------------------------------------------------------------------------------------------------
# prepare: here, with PyPI


def wheel_metadata(path: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist) of a wheel file."""
    with zipfile.ZipFile(path) as archive:
        member = next(n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(member).decode("utf-8"))
    return message["Name"], message["Version"], message.get_all("Requires-Dist") or []


def pip(*arguments: str) -> subprocess.CompletedProcess:
    """``python -m pip ARGUMENTS`` of this interpreter, output captured."""
    return subprocess.run([sys.executable, "-m", "pip", *arguments], capture_output=True, text=True)


FOR_THE_DEVICE = ("--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp")


def pip_download(requirement: str, into: Path) -> tuple[Path | None, str]:
    """Download one CPython 3.12 x86-64 wheel of ``requirement`` into ``into``: (the file, '') or (None, why).
    A package with an sdist only is built here when pure Python (a ``py3-none-any`` wheel)."""
    into.mkdir(parents=True, exist_ok=True)
    before = set(into.iterdir())
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    done = pip("download", "-q", "--no-deps", *FOR_THE_DEVICE, *platforms, "-d", str(into), requirement)
    new = sorted(set(into.iterdir()) - before)
    if done.returncode == 0 and new:
        return new[0], ""
    if done.returncode == 0:  # already there
        wanted = canonical(re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0])
        found = [path for path in into.glob("*.whl") if canonical(path.name.split("-")[0]) == wanted]
        if found:
            return found[0], ""
    with tempfile.TemporaryDirectory() as scratch:
        sdist = pip("download", "-q", "--no-deps", "--no-binary=:all:", "-d", scratch, requirement)
        files = list(Path(scratch).iterdir())
        if sdist.returncode or not files:
            return None, f"no cp312 manylinux wheel and no sdist: {done.stderr.strip().splitlines()[-1:]}"
        built = pip("wheel", "-q", "--no-deps", "-w", str(Path(scratch) / "wheel"), str(files[0]))
        wheels = list((Path(scratch) / "wheel").glob("*.whl"))
        if built.returncode or not wheels:
            return None, f"sdist only, and it did not build here: {built.stderr.strip().splitlines()[-1:]}"
        if not wheels[0].name.endswith(("-py3-none-any.whl", "-py2.py3-none-any.whl")):
            return None, f"sdist only, and not pure Python ({wheels[0].name}): needs a build for CPython 3.12"
        target = into / wheels[0].name
        shutil.move(str(wheels[0]), target)
        return target, ""


class Resolver:
    """Metadata for :func:`closure`: this venv's installed version when it satisfies the requirement (what the
    tests here ran), else the newest matching cp312 wheel on PyPI; our own package from the built wheel."""

    def __init__(self, own_wheel: Path, scratch: Path) -> None:
        self.own_wheel, self.scratch = own_wheel, scratch
        self.failures: dict[str, str] = {}

    def __call__(self, name: str, specifier) -> tuple[str, list[str]]:
        import importlib.metadata

        if name == canonical(PACKAGE):
            _, version, requires = wheel_metadata(self.own_wheel)
            return version, requires
        try:
            installed = importlib.metadata.distribution(name)
            if specifier.contains(installed.version, prereleases=True):
                return installed.version, installed.requires or []
        except importlib.metadata.PackageNotFoundError:
            pass
        path, why = pip_download(f"{name}{specifier}", self.scratch)
        if path is None:
            self.failures[name] = why
            return "?", []
        _, version, requires = wheel_metadata(path)
        return version, requires


def working_tree_bytes() -> int:
    """Bytes of the files that travel without ``carry``: tracked, and untracked but not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return sum((REPO / os.fsdecode(p)).stat().st_size for p in listed if p and (REPO / os.fsdecode(p)).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def mib(count: int) -> str:
    return f"{count / 2**20:.1f} MiB"


@dataclass(frozen=True)
class Official:
    """An official-code model's parity bench, what it needs carried, and how it is called on the device."""

    bench: str
    repository: str
    pins: str
    arguments: tuple[str, ...]
    """After ``--official CHECKOUT``; ``{env}`` is the model environment (created before when it is named)."""
    where: str
    """Where the bench computes (read off its code on 2026-11-28: none of them has a --device option)."""


OFFICIAL = {
    "show_o2": Official("bench/adapter_parity.py", "showlab/Show-o", "model_adapters/environments/show_o2.txt",
                        ("--model", "show_o2", "--env", "{env}"), "CPU: no --device option (the backend runs on cpu)"),
    "omnigen2": Official("bench/parity/omnigen2.py", "VectorSpaceLab/OmniGen2",
                         "model_adapters/environments/omnigen2.txt", ("--env", "{env}"),
                         "no --device option: CUDA when torch sees it"),
    "janus_pro": Official("bench/parity/janus_pro.py", "deepseek-ai/Janus", "bench/parity/envs/janus_pro.txt", (),
                          "CPU: no --device option (the bench makes .cuda() a no-op)"),
    "emu3": Official("bench/parity/emu3.py", "baaivision/Emu3", "bench/parity/envs/emu3.txt", (),
                     "CPU: no --device option (the bench rewrites cuda:0 to cpu)"),
    "bagel": Official("bench/adapter_parity.py", "ByteDance-Seed/Bagel", "model_adapters/environments/bagel.txt",
                      ("--model", "bagel", "--env", "{env}"), "the official code needs CUDA and flash-attn"),
}  # fmt: skip
"""Parity benches that compare with a model's official checkout (their own environment: pinned wheels)."""


MEDIA = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".mp4", ".pdf", ".ipynb", ".zip", ".tar", ".gz")
"""Files of an official checkout that are not carried (with any file over 1 MiB)."""


def build_own_wheel(into: Path) -> Path:
    """This package as a wheel (``pip wheel --no-deps .``)."""
    for old in into.glob("lmms_eval_unify-*.whl"):
        old.unlink()
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(into), "."]
    had_build = (REPO / "build").exists()
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    if not had_build:  # setuptools' in-tree build folder, ours alone
        shutil.rmtree(REPO / "build", ignore_errors=True)
    return next(into.glob("lmms_eval_unify-*.whl"))


def pin_lines(pins: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in pins.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def prepare_official(model: str, checkout: Path, into: Path, present: dict[str, str | None]) -> list[str]:
    """Copy ``checkout`` (without .git) and download the pinned environment's missing wheels under
    ``into/official/<model>``; report lines."""
    spec = OFFICIAL[model]
    target = into / "official" / model
    shutil.rmtree(target, ignore_errors=True)
    skipped: list[Path] = []

    def ignore(folder: str, names: list[str]) -> set[str]:
        """.git, caches, media and files over 1 MiB: the benches need the code and configs."""
        out = {n for n in names if n in (".git", "__pycache__") or n.lower().endswith(MEDIA)}
        out |= {n for n in names if (Path(folder) / n).is_file() and (Path(folder) / n).stat().st_size > 2**20}
        skipped.extend(Path(folder) / n for n in out if (Path(folder) / n).is_file())
        return out

    shutil.copytree(checkout, target / "checkout", ignore=ignore)
    wheels = target / "wheels"
    with tempfile.TemporaryDirectory() as scratch:
        resolver = Resolver(Path(), Path(scratch))
        # the model environment sees the device's packages behind its pins (environments.py's .pth)
        needed = closure(pin_lines(REPO / spec.pins), resolver, present)
    left_out = sum(path.stat().st_size for path in skipped)
    lines = [f"{model}: checkout {mib(folder_bytes(target / 'checkout'))} from {checkout} "
             f"({len(skipped)} media or large files left out, {mib(left_out)})"]  # fmt: skip
    for name, version in sorted(needed.carry.items()):
        path, why = pip_download(f"{name}=={version}", wheels)
        lines.append(f"  {name}=={version}: " + (mib(path.stat().st_size) if path else f"NOT CARRIED ({why})"))
    lines.append(f"  {model} total {mib(folder_bytes(target))}")
    return lines


def prepare(args: argparse.Namespace) -> int:
    into = (REPO / args.into).resolve() if not Path(args.into).is_absolute() else Path(args.into)
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.whl"):  # each prepare decides the whole content
        old.unlink()
    shutil.rmtree(into / "official", ignore_errors=True)
    own = build_own_wheel(into)
    present = device_present()
    with tempfile.TemporaryDirectory() as scratch:
        resolver = Resolver(own, Path(scratch))
        needed = closure([PACKAGE], resolver, present, prune=NOT_NEEDED, force=(*FORCE_CARRY, *args.carry))
    print(f"device packages: KINDS.md list of {DEVICE_PACKAGES_DATE}; markers of CPython 3.12 on x86-64 Linux")
    problems = [f"{name}: {why}" for name, why in resolver.failures.items()] + needed.conflicts
    print(f"{'package':32} {'version':14} {'size':>10}  required by")
    for name, version in sorted(needed.carry.items()):
        if name == canonical(PACKAGE):
            path: Path | None = own
        else:
            path, why = pip_download(f"{name}=={version}", into)
            if path is None:
                problems.append(f"{name}=={version}: {why}")
        size = mib(path.stat().st_size) if path else "-"
        print(f"{name:32} {version:14} {size:>10}  {', '.join(sorted(needed.required_by[name]))[:60]}")
    print(
        f"left to the device ({len(needed.present)}): "
        + ", ".join(f"{n} ({w})" for n, w in sorted(needed.present.items()))
    )
    print(f"not carried, no step imports them ({len(needed.pruned)}): {', '.join(sorted(needed.pruned))}")
    for model in args.with_official:
        if model not in OFFICIAL:
            problems.append(f"--with-official {model}: not one of {', '.join(OFFICIAL)}")
            continue
        root = Path(args.official_root or "")
        candidates = [root / model, root / OFFICIAL[model].repository.split("/")[1]]
        checkout = next((c for c in candidates if c.is_dir()), None)
        if checkout is None:
            problems.append(f"--with-official {model}: no checkout at {' or '.join(map(str, candidates))}")
            continue
        print("\n".join(prepare_official(model, checkout, into, present)))
    wheels, tree, official = folder_bytes(into), working_tree_bytes(), folder_bytes(into / "official")
    print(
        f"carried: {len(list(into.glob('*.whl')))} wheels in {into.name}/, {mib(wheels)}; working tree {mib(tree)}; "
        f"together {mib(wheels + tree)} of the {mib(BUDGET_BYTES)} a call may carry"
    )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    if wheels + tree > BUDGET_BYTES:
        print(
            f"OVER BUDGET by {mib(wheels + tree - BUDGET_BYTES)} (the run's wheels {mib(wheels - official)}, "
            f"official checkouts and their wheels {mib(official)}): the device tool refuses such a call; drop "
            "--with-official models or add names to NOT_NEEDED"
        )
        return 1
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------------------------------
# run: on the device (or here with --device cpu --smoke)

TOTAL_BUDGET_S = 470
"""The whole run's bound (the issue's 8 minutes on one H100, less 10 s for the start and the table); each step's
limit is cut to what is left of it. The device tool's call limit is 600 s."""


@dataclass
class Row:
    step: str
    device: str
    figure: str
    status: str
    seconds: float = 0.0
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    name: str
    command: Callable[[argparse.Namespace, Path], list[str]]
    parse: Callable[[str, Path], tuple[str, str, dict]]
    """(stdout, work folder) -> (figure, status, details)."""
    timeout_s: int
    smoke_timeout_s: int


def device_name(device: str) -> str:
    if not device.startswith("cuda"):
        return "cpu"
    try:
        import torch

        return torch.cuda.get_device_name(device) if torch.cuda.is_available() else "cuda (not available)"
    except Exception as error:  # noqa: BLE001 - a row, never a crash
        return f"cuda ({type(error).__name__})"


GENERATION = re.compile(
    r"batch 1 (?P<single>[\d.e+-]+) img/s .*?batch (?P<batch>\d+) (?P<batched>[\d.e+-]+) img/s .*?"
    r"ratio (?P<ratio>[\d.]+); batched == one-by-one for (?P<equal>\d+)/(?P<images>\d+) images "
    r"\(max pixel difference (?P<diff>\d+)\)"
)
PARITY = re.compile(r"^(?P<model>\w+): (?P<same>\d+)/(?P<checks>\d+) identical\s*$", re.MULTILINE)


def parse_generation(stdout: str, work: Path) -> tuple[str, str, dict]:
    match = GENERATION.search(stdout)
    if not match:
        return "", "failed: no 'batched == one-by-one' line in the output", {}
    g = match.groupdict()
    figure = (
        f"ratio {g['ratio']} (batch {g['batch']} {g['batched']} img/s vs batch 1 {g['single']} img/s); "
        f"batched == single for {g['equal']}/{g['images']} (max diff {g['diff']})"
    )
    status = "ok" if g["equal"] == g["images"] else "differs"
    return figure, status, g


def parse_metrics(stdout: str, work: Path) -> tuple[str, str, dict]:
    path = work / "metrics.json"
    if not path.is_file():
        return "", "failed: metrics_bench.py wrote no JSON", {}
    results = json.loads(path.read_text())
    clip = results.get("CLIP-I")
    if not clip:
        return "", "failed: no CLIP-I entry in the JSON", results
    figure = (
        f"CLIP-I {clip['module_items_per_s']:.1f} img/s (naive loop {clip['naive_items_per_s']:.1f}, "
        f"{clip['speedup']:.1f}x), agree {clip['agree']} (max |diff| {clip['max_deviation']:.2g})"
    )
    disagree = [name for name, r in results.items() if isinstance(r, dict) and r.get("agree") is False]
    return figure, "ok" if not disagree else f"ok; module != naive for {', '.join(disagree)}", results


def parse_parity(stdout: str, work: Path) -> tuple[str, str, dict]:
    matches = list(PARITY.finditer(stdout))
    if not matches:
        return "", "failed: no 'NAME: k/n identical' line", {}
    g = matches[-1].groupdict()
    return f"{g['model']}: {g['same']}/{g['checks']} identical", "ok" if g["same"] == g["checks"] else "differs", g


def generation_command(args: argparse.Namespace, work: Path) -> list[str]:
    size = (
        ["--shape", "tiny", "--batch", "3", "--images", "6"]
        if args.smoke
        else ["--shape", "janus-pro-1b", "--batch", str(args.batch), "--images", str(args.images)]
    )
    return [str(BENCH / "generation_bench.py"), "--primitive", "--device", args.device, *size]


def metrics_command(args: argparse.Namespace, work: Path) -> list[str]:
    size = (
        ["--samples", "4", "--size", "64", "--repeats", "1", "--backbones", "tiny", "--threads", "1"]
        if args.smoke
        else ["--samples", "128", "--repeats", "2", "--backbones", "full"]
    )
    return [str(BENCH / "metrics_bench.py"), "--device", args.device, *size, "--json", str(work / "metrics.json")]


def qwen_command(args: argparse.Namespace, work: Path) -> list[str]:
    return [str(BENCH / "parity" / "qwen_image_edit.py"), "--device", args.device, "--work", str(work)]


STEPS = (
    Step("generation: batched vs single (janus_pro)", generation_command, parse_generation, 240, 120),
    Step("metrics: CLIP-I img/s", metrics_command, parse_metrics, 150, 120),
    Step("parity: qwen_image_edit", qwen_command, parse_parity, 90, 300),
)
"""The steps every run has, with their time limits (full sizes, smoke sizes). Sizing for one H100 (estimates: no
GPU has run this yet): Janus-Pro-1B's 576 decoding steps per image are about 10-30 ms each, and the bench decodes
the equivalent of 11 image runs at batch 8 (warm-ups, 8 one by one, one batch of 8) after writing 1.87 B random
parameters; the metrics bench at 128 samples, 2 repeats does about a third of the 256-sample, 3-repeat run of
docs/benchmarks.md (every metric, module and naive loop); the tiny qwen_image_edit pipeline takes seconds once
loaded. A step never gets more than what is left of :data:`TOTAL_BUDGET_S`."""
OFFICIAL_TIMEOUT_S = 150
"""Each official-code parity (43-150 s on 2 CPUs for show_o2, docs/fidelity/adapters.md), run only when it fits."""


def install_wheels(wheels: Path, site: Path) -> tuple[str, str]:
    """``pip install --no-index --no-deps --target site`` of ``wheels/*.whl``, then this tree's own package over
    the installed copy (so the wheel cannot be older than the code): (figure, status)."""
    files = sorted(wheels.glob("*.whl"))
    if not files:
        return f"no {wheels.name}/*.whl: the interpreter's own packages", "skipped"
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    foreign = [f.name for f in files if re.search(r"-cp3\d+-cp3\d+-", f.name) and f"-{here}-" not in f.name]
    if foreign:  # prepare downloads for the device's CPython 3.12
        return f"not installed: {foreign[0]} is not for {here}; the interpreter's own packages", "skipped"
    quiet = ("-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade", "--ignore-requires-python")
    done = pip("install", *quiet, "--target", str(site), *map(str, files))
    if done.returncode:
        return "", f"failed: pip install: {done.stderr.strip()[-300:]}"
    installed = site / "lmms_eval_unify"
    if installed.is_dir():  # the wheel's code, replaced by the tree's (the setup.py mapping)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(REPO / "lmms_eval_unify", installed, dirs_exist_ok=True, ignore=ignore)
        for folder in ("model_adapters", "tasks"):
            shutil.copytree(REPO / folder, installed / folder, dirs_exist_ok=True, ignore=ignore)
    return f"{len(files)} wheels into {site}", "ok"


def overlay_python(site: Path | None, root: Path) -> Path:
    """A virtualenv at ``root`` (no pip of its own) whose interpreter sees ``site`` (the carried wheels) and then
    this interpreter's site-packages, through a ``.pth`` file; its interpreter. The children run on it rather
    than with ``PYTHONPATH``, which a model environment (``lmms-eval-unify env create``, created from it) would
    inherit ahead of its own pins (a carried transformers 5.24 would shadow a pinned 4.x); its ``.pth`` puts
    these folders after the environment's own site-packages instead."""
    import sysconfig
    import venv

    shutil.rmtree(root, ignore_errors=True)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    folders = [str(site)] if site else []
    folders += sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = [f"import site; site.addsitedir({folder!r})" for folder in folders]
    (purelib / "_gpu_validation.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "bin" / "python"


def version_problems(python: Path, environ: dict[str, str]) -> tuple[str, str]:
    """Our requirements (and theirs) that the children's interpreter does not satisfy: ``pip check``'s version
    conflicts (missing packages are counted: most are the NOT_NEEDED ones)."""
    done = subprocess.run([str(python), "-m", "pip", "check"], env=environ, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    missing = [line for line in lines if "which is not installed" in line]
    conflicts = [line for line in lines if "but you have" in line]
    figure = f"{len(conflicts)} version conflicts, {len(missing)} declared requirements missing"
    return figure + (": " + "; ".join(conflicts[:5]) if conflicts else ""), "ok" if not conflicts else "warning"


def run_step(
    command: list[str], environ: dict[str, str], timeout: float, log, cwd: Path = REPO
) -> tuple[int | None, str, float]:
    """(exit status or None on timeout, stdout, seconds); everything goes to ``log``."""
    started = time.perf_counter()
    log.write(f"\n===== {' '.join(command)} (limit {timeout:.0f} s)\n")
    log.flush()
    try:
        done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        code = None
        stdout = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else expired.stdout or ""
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr or ""
    seconds = time.perf_counter() - started
    log.write(stdout[-20000:] + "\n----- stderr (end)\n" + stderr[-8000:] + f"\n===== exit {code}, {seconds:.1f} s\n")
    log.flush()
    return code, stdout + ("" if code == 0 else "\n" + stderr), seconds


def failure_reason(code: int | None, output: str, timeout: float) -> str:
    """Why a step failed: its time limit, or its exit status and last line of output."""
    if code is None:
        return f"failed: timed out after {timeout:.0f} s"
    last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
    return f"failed: exit {code}: {last[0].strip()[:200]}"


def official_row(
    model: str, args: argparse.Namespace, python: Path, environ: dict[str, str], name: str, log, left: float
) -> Row:
    """An official-code parity when ``prepare --with-official`` carried its checkout, else a row saying why not."""
    spec = OFFICIAL[model]
    step = f"parity: {model} (official code)"
    where = f"; {spec.where}"
    bench = REPO / spec.bench
    text = bench.read_text(encoding="utf-8") if bench.is_file() else ""
    if "__main__" not in text:
        return Row(step, name, "", f"skipped: {spec.bench} has no command line yet{where}")
    if "--model" in spec.arguments and f'"{model}": ' not in text:
        return Row(step, name, "", f"skipped: {spec.bench} has no {model} yet{where}")
    carried = Path(args.wheels) / "official" / model
    if not (carried / "checkout").is_dir():
        return Row(step, name, "", f"skipped: no official checkout carried (prepare --with-official {model}){where}")
    if left < OFFICIAL_TIMEOUT_S:
        return Row(step, name, "", f"skipped: {left:.0f} s left of the {TOTAL_BUDGET_S} s budget{where}")
    offline = {**environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str((carried / "wheels").resolve())}
    started = time.perf_counter()
    env_folder = Path(tempfile.gettempdir()) / "gpu_validation_envs" / model
    if "{env}" in spec.arguments:
        create = [
            str(python),
            "-m",
            "lmms_eval_unify.cli",
            "env",
            "create",
            model,
            "--into",
            str(env_folder),
            "--pins",
            str(REPO / spec.pins),
        ]
        # outside the tree: ``-m`` puts the working folder first, and the tree's layout is not the package's
        code, output, _ = run_step(create, offline, OFFICIAL_TIMEOUT_S / 2, log, cwd=Path(tempfile.gettempdir()))
        if code != 0:
            reason = failure_reason(code, output, OFFICIAL_TIMEOUT_S / 2)
            return Row(step, name, "", reason.replace("failed: ", "failed: model environment: ", 1) + where)
    arguments = [a.replace("{env}", str(env_folder)) for a in spec.arguments]
    command = [str(python), str(bench), "--official", str((carried / "checkout").resolve()), *arguments]
    budget = OFFICIAL_TIMEOUT_S - (time.perf_counter() - started)
    code, output, _ = run_step(command, offline, budget, log)
    figure, status, details = parse_parity(output, Path())
    if code != 0:
        status = failure_reason(code, output, budget)
    return Row(step, name, figure, status + where, time.perf_counter() - started, details)


def format_table(rows: list[Row]) -> str:
    header = ("step", "device", "figure", "status", "s")
    cells = [header] + [(r.step, r.device, r.figure or "-", r.status, f"{r.seconds:.0f}") for r in rows]
    lines = ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells]
    lines.insert(1, "|---|---|---|---|---:|")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    out = Path(args.out or os.environ.get("OUT") or tempfile.mkdtemp(prefix="gpu_validation_"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_validation_work_"))
    name = device_name(args.device)
    environ = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    rows: list[Row] = []
    with open(out / "gpu_validation.log", "w", encoding="utf-8") as log:
        figure, status = install_wheels(Path(args.wheels), Path(args.site))
        python = Path(sys.executable)
        try:
            site = Path(args.site) if status == "ok" else None
            python = overlay_python(site, Path(args.site).with_name(Path(args.site).name + "_python"))
            figure += f"; children run {python} (sees {f'{site}, then ' if site else ''}{sys.prefix})"
        except Exception as error:  # noqa: BLE001 - a row, never a crash
            if status == "ok":
                environ["PYTHONPATH"] = os.pathsep.join(filter(None, [args.site, environ.get("PYTHONPATH")]))
            figure += f"; no overlay interpreter ({error!r})" + (f": PYTHONPATH={args.site}" if status == "ok" else "")
        rows.append(Row("setup: carried wheels", name, figure, status, time.perf_counter() - started))
        figure, status = version_problems(python, environ)
        rows.append(Row("setup: pip check", name, figure, status))
        cuda_missing = args.device.startswith("cuda") and name.startswith("cuda (")
        for step in STEPS:
            step_work = work / re.sub(r"\W+", "_", step.name)
            step_work.mkdir(parents=True, exist_ok=True)
            left = TOTAL_BUDGET_S - (time.perf_counter() - started)
            timeout = min(step.smoke_timeout_s if args.smoke else step.timeout_s, left)
            if cuda_missing:
                rows.append(Row(step.name, name, "", "skipped: torch sees no CUDA device"))
                continue
            if timeout < 10:
                rows.append(Row(step.name, name, "", f"skipped: {left:.0f} s left of the {TOTAL_BUDGET_S} s budget"))
                continue
            code, output, seconds = run_step([str(python), *step.command(args, step_work)], environ, timeout, log)
            try:
                figure, status, details = step.parse(output, step_work)
            except Exception as error:  # noqa: BLE001 - a row, never a crash
                figure, status, details = "", f"failed: reading its output: {error!r}", {}
            if code != 0:
                reason = failure_reason(code, output, timeout)
                status = reason if not figure else f"{status}; {reason}"
            rows.append(Row(step.name, name, figure, status, seconds, details))
            print(f"[{time.perf_counter() - started:5.0f} s] {step.name}: {figure or '-'} ({status})", flush=True)
        for model in OFFICIAL:
            left = TOTAL_BUDGET_S - (time.perf_counter() - started)
            rows.append(official_row(model, args, python, environ, name, log, left))
    table = format_table(rows)
    total = time.perf_counter() - started
    heading = (
        f"GPU validation on {name} ({'smoke sizes' if args.smoke else 'full sizes'}), python "
        f"{sys.version.split()[0]}, {total:.0f} s in all"
    )
    print(f"\n{heading}\n\n{table}")
    (out / "gpu_validation.md").write_text(f"{heading}\n\n{table}\n", encoding="utf-8")
    record = {"device": name, "smoke": args.smoke, "seconds": total, "rows": [r.__dict__ for r in rows]}
    (out / "gpu_validation.json").write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="here, with PyPI: the wheels the device lacks, into .whl/")
    prep.add_argument("--into", default=".whl", help="folder for the wheels (git-ignored; name it in carry)")
    prep.add_argument("--carry", action="append", default=[], help="carry this device package at our version too")
    prep.add_argument(
        "--with-official",
        action="append",
        default=[],
        choices=sorted(OFFICIAL),
        help="also carry this model's official checkout and pinned-environment wheels",
    )
    prep.add_argument("--official-root", help="folder holding the official checkouts (<model>/ or <repo name>/)")
    go = commands.add_parser("run", help="on the device: every step, one table")
    go.add_argument("--device", default="cuda")
    go.add_argument("--smoke", action="store_true", help="tiny shapes and sizes (a CPU run of a few minutes)")
    go.add_argument("--out", help="folder for gpu_validation.{md,json,log} (default $OUT, else a temporary one)")
    go.add_argument("--wheels", default=str(REPO / ".whl"), help="the carried wheels")
    go.add_argument("--site", default="/tmp/site", help="where the carried wheels are installed")
    go.add_argument("--batch", type=int, default=8, help="generation batch size (full sizes)")
    go.add_argument("--images", type=int, default=8, help="images generated each way (full sizes)")
    args = parser.parse_args(argv)
    return prepare(args) if args.command == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
