"""The test tiers of tests/conftest.py, on a scratch test folder run by a real pytest: ``fast`` is every test
without a cost marker, a tiny-model fixture marks ``models``, and a test that starts a Python process must be
marked ``subprocess`` (or ``slow``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import COST_MARKERS

CONFTEST = Path(__file__).with_name("conftest.py")

SCRATCH_TESTS = """
import subprocess
import sys

import pytest


def markers(request):
    return {m.name for m in request.node.iter_markers()}


@pytest.fixture
def tiny_janus():
    return "a tiny model"


def test_pure(request):
    assert markers(request) == {"fast"}


def test_uses_a_tiny_model(request, tiny_janus):
    assert markers(request) == {"models"}


@pytest.mark.heavy
def test_marked_heavy(request):
    assert markers(request) == {"heavy"}


@pytest.mark.subprocess
def test_marked_child(request):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert markers(request) == {"subprocess"}


def test_unmarked_child():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_non_python_child():
    subprocess.run(["true"], check=True)
"""


def test_markers_are_strict_and_the_tiers_are_declared(pytestconfig):
    """pyproject.toml's ``addopts`` carry ``--strict-markers``: a misspelt cost marker (``@pytest.mark.haevy``) is a
    collection error, not a test silently left in the fast tier."""
    assert pytestconfig.option.strict_markers
    declared = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert {*COST_MARKERS, "fast"} <= declared


@pytest.mark.subprocess
def test_tiers_on_a_scratch_suite(tmp_path):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_scratch.py").write_text(SCRATCH_TESTS)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow\n    subprocess\n    models\n    heavy\n    fast\n"
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", str(tmp_path)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    outcomes = {
        line.split()[1].split("::")[1]: line.split()[0]
        for line in done.stdout.splitlines()
        if line.startswith(("PASSED", "FAILED"))
    }
    assert outcomes == {
        "test_pure": "PASSED",
        "test_uses_a_tiny_model": "PASSED",
        "test_marked_heavy": "PASSED",
        "test_marked_child": "PASSED",
        "test_unmarked_child": "FAILED",
        "test_unmarked_non_python_child": "PASSED",
    }, done.stdout
    assert "started a Python process" in done.stdout and "add @pytest.mark.subprocess" in done.stdout
