"""The helpers adapters declare their check with (``UnifiedModel.missing``): code, weights, device,
credentials, each found without loading anything and named with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from huggingface_hub import constants

from lmms_eval_unify.generation.readiness import (
    Missing,
    missing_code,
    missing_device,
    missing_env,
    missing_weight_file,
    missing_weights,
    weight_file_problem,
)

REPO = "some-org/Some-Model-7B"


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, offline."""
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HOME", str(cache.parent))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def cached_snapshot(cache: Path, repo: str, files: list[str]) -> Path:
    """The layout ``hf download`` leaves: refs/main naming a snapshot folder with the files."""
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    snapshot = root / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    for name in files:
        (snapshot / name).write_text("{}")
    return snapshot


def test_code_present_absent_or_too_old() -> None:
    assert missing_code("m", "json", ("dumps", "loads")) == []
    (absent,) = missing_code("m", "no_such_package_xyz", install="pip install xyz")
    assert absent.kind == "code" and "'no_such_package_xyz'" in absent.what and absent.fix == "pip install xyz"
    (old,) = missing_code("m", "json", ("dumps", "NoSuchClass"))
    assert "NoSuchClass from json" in old.what and "dumps" not in old.what


def test_weights_of_a_repo_not_in_an_empty_offline_cache_name_the_repo_the_path_and_the_fix(hf_cache: Path) -> None:
    (item,) = missing_weights("m", REPO)
    assert item.kind == "weights" and f"'{REPO}'" in item.what
    assert str(hf_cache / "models--some-org--Some-Model-7B") in item.what and "HF_HUB_OFFLINE" in item.what
    assert f"hf download {REPO}" in item.fix and "HF_HOME" in item.fix and "pretrained=<folder>" in item.fix
    (with_env,) = missing_weights("m", REPO, argument="ckpt", env_var="MY_WEIGHTS")
    assert "ckpt=<folder>" in with_env.fix and "MY_WEIGHTS=<folder>" in with_env.fix


def test_weights_in_the_cache_or_a_local_folder_are_checked_for_their_files(hf_cache: Path, tmp_path: Path) -> None:
    cached_snapshot(hf_cache, REPO, ["config.json"])
    assert missing_weights("m", REPO) == []
    (lacking,) = missing_weights("m", REPO, files=("config.json", "model_index.json"))
    assert "lacks model_index.json" in lacking.what
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert missing_weights("m", str(folder)) == []
    (gone,) = missing_weights("m", str(tmp_path / "nowhere"))
    assert "does not exist" in gone.what
    (invalid,) = missing_weights("m", "not a valid id!")
    assert "neither an existing folder nor a Hugging Face repository id" in invalid.what


def test_an_uncached_repo_is_not_missing_when_the_hub_can_be_reached(
    hf_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    assert missing_weights("m", REPO) == []  # building the model downloads it; the check made no request


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer of a machine without a GPU")
def test_a_cuda_device_on_a_machine_without_one() -> None:
    assert missing_device("m", None) == [] and missing_device("m", "cpu") == []
    (requested,) = missing_device("m", "cuda:0")
    assert requested.kind == "device" and "'cuda:0' was requested" in requested.what and "--device cpu" in requested.fix
    (needed,) = missing_device("m", None, needs_cuda=True)
    assert "m needs a CUDA GPU" in needed.what and "--device cpu" not in needed.fix
    (nonsense,) = missing_device("m", "gpu0")
    assert "'gpu0' is not a device" in nonsense.what


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_gpu_index_beyond_the_visible_ones() -> None:
    assert missing_device("m", "cuda") == [] and missing_device("m", None, needs_cuda=True) == []
    (item,) = missing_device("m", f"cuda:{torch.cuda.device_count()}")
    assert "GPU(s) are visible" in item.what


def test_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOME_KEY", raising=False)
    assert missing_env("m", "SOME_KEY", "the API key", "api_key_env") == [
        Missing(
            "credentials",
            "m reads the API key from $SOME_KEY, which is not set",
            "export SOME_KEY=... (or name another variable with --model_args api_key_env=NAME)",
        )
    ]
    monkeypatch.setenv("SOME_KEY", "x")
    assert missing_env("m", "SOME_KEY", "the API key", "api_key_env") == []


def test_a_weights_file_that_is_empty_or_not_its_format_is_named_as_such(tmp_path):
    good = tmp_path / "vae.pth"
    torch.save({"w": torch.zeros(2)}, good)
    (tmp_path / "empty.pth").write_bytes(b"")
    (tmp_path / "html.bin").write_bytes(b"<html>rate limited</html>")
    (tmp_path / "cut.safetensors").write_bytes((10**6).to_bytes(8, "little") + b'{"a":1}')
    (tmp_path / "config.json").write_text("")
    assert weight_file_problem(good) is None
    assert weight_file_problem(tmp_path / "absent.pth") == "does not exist (or is not a file)"
    assert weight_file_problem(tmp_path / "empty.pth") == "is empty (0 bytes)"
    assert "not a torch checkpoint" in str(weight_file_problem(tmp_path / "html.bin"))
    assert "not a safetensors file" in str(weight_file_problem(tmp_path / "cut.safetensors"))
    assert weight_file_problem(tmp_path / "config.json") == "is empty (0 bytes)"
    (problem,) = missing_weight_file("m", str(tmp_path / "empty.pth"), "vae_path", "the VAE file")
    assert problem.kind == "weights" and "is empty" in problem.what and "vae_path=<file>" in problem.fix
    assert missing_weight_file("m", str(good), "vae_path", "the VAE file") == []
    (problem,) = missing_weights("m", str(tmp_path), files=("config.json",))
    assert problem.what == f"m: {tmp_path / 'config.json'} is empty (0 bytes)"
