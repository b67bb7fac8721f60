"""The official-code backends' own logic, without the official code: which revision's configuration and
hyper-parameter layout the Show-o2 backend reads, the OmniGen2 import switch for machines without a GPU, and
the pins each official-code adapter's environment is made from."""

from pathlib import Path

import pytest
from lmms_eval_unify.model_adapters.official.omnigen2_backend import import_model_code
from lmms_eval_unify.model_adapters.official.show_o2_backend import (
    HYPER_PARAMS,
    hyper_params,
    load_file_module,
    token_count_keys,
)
from lmms_eval_unify.model_adapters.official_code import other_commit_warning

from lmms_eval_unify.generation.environments import pins_dir, pins_file
from lmms_eval_unify.integration.plugin import MODELS

OFFICIAL_CODE_MODELS = ("show_o2", "bagel", "omnigen2")


def test_show_o2_reads_the_hyper_parameters_of_both_revisions_by_name():
    head = hyper_params(tuple(range(19)))
    assert (head["num_t2i_image_tokens"], head["num_mmu_image_tokens"], head["max_seq_len"]) == (0, 1, 3)
    assert head["img_pad_id"] == 16 and head["guidance_scale"] == 18
    before = hyper_params(tuple(range(18)))  # 61a034f: one num_image_tokens for both
    assert before["num_t2i_image_tokens"] == before["num_mmu_image_tokens"] == 0 and before["max_seq_len"] == 2
    assert {k: head[k] - 1 for k in HYPER_PARAMS[18][1:]} == {k: before[k] for k in HYPER_PARAMS[18][1:]}
    with pytest.raises(ValueError, match="returned 17 values"):
        hyper_params(tuple(range(17)))


def test_show_o2_finds_the_token_counts_of_both_configuration_layouts():
    head = {"num_t2i_image_tokens": 729, "num_mmu_image_tokens": 729, "num_video_tokens": 3645}
    assert token_count_keys(head) == ("num_t2i_image_tokens", "num_mmu_image_tokens")
    assert token_count_keys({"num_image_tokens": 729}) == ("num_image_tokens", "num_image_tokens")
    with pytest.raises(KeyError, match="num_t2i_image_tokens"):
        token_count_keys({"resolution": 432})


def test_show_o2_loads_its_datasets_utils_by_file_whatever_datasets_is_already(tmp_path):
    import datasets.utils  # Hugging Face's, as in any process running lmms-eval

    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "utils.py").write_text("def image_transform(image, resolution):\n    return 'ours'\n")
    module = load_file_module(tmp_path / "datasets" / "utils.py", "show_o2_datasets_utils")
    assert module.image_transform(None, 432) == "ours" and not hasattr(datasets.utils, "image_transform")


def test_omnigen2_model_code_imports_with_triton_switched_off_without_a_gpu(tmp_path, monkeypatch):
    """Importing OmniGen2's model code with the CUDA build of torch calls ``torch.cuda`` through triton unless
    ``omnigen2.utils.import_utils._triton_available`` is off; the stand-in fails the same way."""
    package = tmp_path / "omnigen2"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "utils" / "__init__.py").write_text("")
    (package / "utils" / "import_utils.py").write_text("_triton_available = True\n")
    (package / "model.py").write_text(
        "from omnigen2.utils import import_utils\n"
        "if import_utils._triton_available:\n"
        "    raise RuntimeError('triton probed torch.cuda')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert import_model_code("omnigen2.model").__name__ == "omnigen2.model"


def test_every_official_code_adapter_has_pins_and_every_pins_file_an_adapter():
    assert sorted(path.stem for path in pins_dir().glob("*.txt")) == sorted(OFFICIAL_CODE_MODELS)
    for model in OFFICIAL_CODE_MODELS:
        assert model in MODELS and pins_file(model).is_file()
        pins = [line for line in pins_file(model).read_text().splitlines() if line and not line.startswith("#")]
        assert any(line.startswith("transformers==") for line in pins)
        assert not any(line.split("=")[0].strip() in ("torch", "torchvision") for line in pins)  # shared
    with pytest.raises(SystemExit, match="show_o2"):
        pins_file("no_such_model")


def test_a_checkout_at_another_commit_is_warned_about(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x")
    git = ["git", "-C", str(tmp_path), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert other_commit_warning("show_o2", tmp_path, commit) is None
    warning = other_commit_warning("show_o2", tmp_path, "0" * 40)
    assert warning and commit[:12] in warning and "000000000000" in warning
    assert "not been checked" in str(other_commit_warning("bagel", tmp_path, None))
    assert other_commit_warning("show_o2", Path(tmp_path / "not_git"), commit) is None


@pytest.mark.subprocess
def test_show_o2_preflight_runs_the_backend_probe_where_the_official_code_will_run(tmp_path, monkeypatch):
    """A stand-in checkout whose ``models`` fails as Show-o2's does beside transformers 5: the preflight reports
    it from the model environment (here ``env=current``: this interpreter, which lacks omegaconf and torchdiffeq
    too), next to the VAE file that is present but empty, in one round and without building anything."""
    from lmms_eval_unify.model_adapters.show_o2 import ShowO2, ShowO2Settings

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("from transformers.modeling_attn_mask_utils import x\n")
    (tmp_path / "Wan2.1_VAE.pth").write_bytes(b"")
    settings = ShowO2Settings(repo_path=str(tmp_path), env="current", vae_path=str(tmp_path / "Wan2.1_VAE.pth"))
    found = ShowO2.missing(settings)
    code = {item.what.split("'")[1] for item in found if item.kind == "code"}
    assert {"omegaconf", "torchdiffeq", "models", "models.misc"} <= code, found
    assert any("is empty (0 bytes)" in item.what for item in found if item.kind == "weights"), found
