"""Every adapter declares the check the run preflight asks (``UnifiedModel.missing``): on a bare machine
(empty offline Hugging Face cache, no checkouts, no keys) each names what it lacks, with the fix, without
building or loading anything; the baseline instruments lack nothing."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from huggingface_hub import constants
from lmms_eval_unify.model_adapters.baselines import Instrument

from lmms_eval_unify.commands.check_adapter import main as check_adapter_main
from lmms_eval_unify.generation.readiness import Missing, model_missing
from lmms_eval_unify.integration.model import UnifiedModel
from lmms_eval_unify.integration.plugin import MODELS

REQUIRED_ARGS = {"composed": {"und": "qwen2_5_vl", "gen": "qwen_image_edit"}, "upstream": {"upstream": "mmada"}}
"""Model arguments without a default."""
EXPECTED_KINDS = {
    "janus_pro": {"weights"},
    "emu3": {"weights"},
    "qwen_image_edit": {"weights"},
    "composed": {"weights"},  # its drawing adapter's
    "openai_image": {"credentials"},
    "show_o2": {"code", "weights"},
    "bagel": {"code", "weights"},
    "omnigen2": {"code", "weights"},
    "upstream": {"code", "weights"},  # lmms-eval's mmada: the MMaDA checkout and its weights
}
"""What each adapter lacks at least on a bare machine."""


def adapter_class(name: str) -> type:
    module, _, attribute = MODELS[name].rpartition(".")
    return getattr(importlib.import_module(module), attribute)


@pytest.fixture
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HOME", str(cache.parent))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    for name in ("OPENAI_API_KEY", "SHOW_O2_REPO", "BAGEL_REPO", "OMNIGEN2_REPO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LMMS_EVAL_UNIFY_MODEL_ENVS", str(tmp_path / "no_model_envs"))
    return cache


IMPORTS_A_PIPELINE = {"composed", "qwen_image_edit"}
"""Their checks import diffusers' pipeline class (seconds): the first of them to run pays it."""


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.heavy] if n in IMPORTS_A_PIPELINE else []) for n in sorted(MODELS)]
)
def test_every_adapter_names_what_a_bare_machine_lacks(name: str, bare_machine: Path) -> None:
    cls = adapter_class(name)
    if not issubclass(cls, UnifiedModel):
        assert name == "unify_replay"  # a plain lmms-eval model replaying saved outputs: it loads nothing
        return
    found = model_missing(cls, REQUIRED_ARGS.get(name, {}))
    if issubclass(cls, Instrument):
        assert found == []
        return
    assert "missing" in vars(cls), f"{name} does not declare its check"
    assert all(isinstance(item, Missing) and item.what and item.fix for item in found)
    assert EXPECTED_KINDS[name] <= {item.kind for item in found}, found
    assert not list(bare_machine.rglob("*")), "the check wrote into the Hugging Face cache"


def test_every_declared_adapter_is_expected() -> None:
    declared = {name for name in MODELS if "missing" in vars(adapter_class(name))}
    assert declared == set(EXPECTED_KINDS)


def test_check_adapter_lists_what_is_missing_before_building(bare_machine: Path, tmp_path: Path, capsys) -> None:
    args = ["janus_pro", "--model_args", f"pretrained={tmp_path / 'no_weights'}", "--output_dir", str(tmp_path)]
    assert check_adapter_main(args) == 2
    out = capsys.readouterr().out
    assert "janus_pro: cannot build the model: ModelNotReady: 1 thing(s) missing, nothing was loaded" in out
    assert f"[weights] janus_pro: weights folder {tmp_path / 'no_weights'} does not exist" in out
