"""The mission command on a bare machine: one preflight round lists every missing piece, the model's weights
(the check its adapter declares) next to the data, judge and metric weights, and stops before anything is
built (issue 25)."""

from __future__ import annotations

import subprocess

import pytest
from cli_runs import BIN, offline_env


@pytest.mark.slow
def test_the_mission_command_on_a_bare_machine_lists_the_model_with_everything_else(tmp_path):
    env = offline_env(tmp_path / "unused")
    unset = ("LMMS_EVAL_UNIFY_", "OPENAI_", "HF_HUB_CACHE", "TORCH_HOME", "XDG_CACHE_HOME")
    env = {key: value for key, value in env.items() if not key.startswith(unset)}
    env |= {"HF_HOME": str(tmp_path / "hf"), "HOME": str(tmp_path), "PWD": str(tmp_path)}
    out = tmp_path / "out"
    command = [str(BIN / "lmms-eval"), "--tasks", "mme_unify,unig2u", "--model", "janus_pro", "--output_path", str(out)]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-3000:]
    block = done.stderr
    model = block[block.index("[model weights] janus_pro") :]
    assert model.startswith(
        "[model weights] janus_pro weights 'deepseek-community/Janus-Pro-7B' are not in the Hugging Face cache "
        f"(looked in {tmp_path / 'hf' / 'hub' / 'models--deepseek-community--Janus-Pro-7B'})"
    )
    assert "needed by: --model janus_pro" in model and "fix: `hf download deepseek-community/Janus-Pro-7B`" in model
    assert "pretrained=<folder>" in model and "HF_HOME" in model
    for other in ("[data] cannot read the data of mme_unify_sipu", "[judge] no model-as-judge endpoint",
                  "[weights] lpips backbone"):  # fmt: skip
        assert other in block
    assert "Traceback" not in block and "OSError" not in block
    assert not list(out.rglob("*.png")) and not list(out.rglob("*_results.json"))
