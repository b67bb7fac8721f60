"""The wheel ships the task YAMLs under lmms_eval_unify and creates no generic top-level packages or files; its
install requirements are ranges a lab's environment can satisfy, with CI's exact versions in constraints.txt."""

import json
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
LAB_VERSIONS = {"torch": "2.6.0", "torchvision": "0.21.0", "diffusers": "0.32.0", "torch-fidelity": "0.3.0"}
"""What a lab's CUDA environment may already have (older than CI's pins, inside our ranges)."""


def build_wheel(tmp_path: Path) -> Path:
    """Our wheel, built from a clean copy (setuptools' build/ folder would carry stale files between builds)."""
    source = tmp_path / "src"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "out")
    shutil.copytree(REPO, source, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("lmms_eval_unify-*.whl")
    return wheel


def requirements() -> dict[str, Requirement]:
    """pyproject.toml's install requirements by name."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return {(r := Requirement(line)).name.lower(): r for line in declared}


def constraints() -> dict[str, Version]:
    """constraints.txt's pins by name."""
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = Version(version.strip())
    return pins


def test_every_pin_is_inside_its_declared_range_and_the_heavy_packages_are_ranges():
    declared, pins = requirements(), constraints()
    assert {"torch", "torchvision", "dreamsim", "diffusers", "torch-fidelity", "lmms-eval"} <= pins.keys()
    for name, pin in pins.items():
        assert declared[name].specifier.contains(pin), f"constraints.txt pins {name} {pin} outside {declared[name]}"
    for name, lab in LAB_VERSIONS.items():
        assert declared[name].specifier.contains(lab), f"{name} {lab} (a lab's) would be replaced: {declared[name]}"
    assert not [r for r in declared.values() if str(r.specifier).startswith("==")], "exact pins go to constraints.txt"


def test_the_installed_versions_are_ci_s_pins():
    """scripts/install.sh installs with constraints.txt: what this environment has is what CI tests."""
    for name, pin in constraints().items():
        assert Version(metadata.version(name)) == pin, name


def fake_environment(folder: Path, versions: dict[str, str]) -> Path:
    """A venv (with pip) whose site-packages holds, for every name, an installed distribution of that version
    with no requirements of its own: what pip sees in a lab's environment. Returns its python."""
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())  # fmt: skip
    for name, version in versions.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "INSTALLER").write_text("pip\n")
    return python


@pytest.mark.slow
def test_installing_the_wheel_into_a_lab_environment_keeps_its_torch(tmp_path):
    """pip's own resolver, offline, over an environment that has every requirement at an allowed version (torch
    2.6 and friends older than CI's): the dry-run report installs our wheel and nothing else."""
    wheel = build_wheel(tmp_path)
    wanted = Parser().parsestr(zipfile.ZipFile(wheel).read(next(
        n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))).decode())  # fmt: skip
    names = [Requirement(r).name for r in wanted.get_all("Requires-Dist") if "extra ==" not in r]
    versions = {name: LAB_VERSIONS.get(name.lower()) or metadata.version(name) for name in names}
    python = fake_environment(tmp_path / "lab", versions)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--no-index", "--report", report, wheel],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    installed = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert installed == ["lmms-eval-unify"]


@pytest.mark.slow
def test_wheel_file_list(tmp_path):
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    dist_info = next(n for n in top_level if n.endswith(".dist-info"))
    assert top_level == {"lmms_eval_unify", dist_info}
    assert not [name for name in names if name.endswith(".pth")], "nothing runs at interpreter start"
    for expected in (
        "lmms_eval_unify/tasks/uni_mmmu/uni_mmmu_maze.yaml",
        "lmms_eval_unify/tasks/uni_mmmu/_default_template_yaml",
        "lmms_eval_unify/benchmarks/uni_mmmu/inputs.py",
        "lmms_eval_unify/model_adapters/baselines.py",
        "lmms_eval_unify/integration/plugin.py",
        "lmms_eval_unify/adapter.py",
        "lmms_eval_unify/run/saved.py",
        "lmms_eval_unify/commands/score.py",
        "lmms_eval_unify/data/release.py",
        "lmms_eval_unify/benchmarks/gapeval/judge_prompts.yaml",
        "lmms_eval_unify/benchmarks/unig2u/pairs_table3.yaml",
    ):
        assert expected in names, expected
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "lmms_eval_unify.integration.plugin:manifests" in text and "lmms-eval-unify" in text
