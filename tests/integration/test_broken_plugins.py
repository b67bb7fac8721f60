"""A third-party ``lmms_eval.models`` plugin whose entry point raises: lmms-eval 0.7.3 stops loading plugins
at it; our plugin names it when lmms-eval reaches ours, and ``lmms-eval-unify doctor`` names it always."""

import subprocess
import sys
from pathlib import Path

import pytest
from log_capture import logged

from lmms_eval_unify.integration.broken_plugins import GROUP, find_broken_plugins, plugin_entry_points
from lmms_eval_unify.integration.plugin import ENTRY_POINT, manifests
from lmms_eval_unify.puzzles.dataset import write_puzzles

BROKEN_PLUGIN = "broken_model_plugin"
BIN = Path(sys.executable).parent


def write_broken_plugin(root: Path) -> Path:
    """A distribution (dist-info + module, no install) whose model entry point raises when loaded."""
    root.mkdir(exist_ok=True)
    (root / f"{BROKEN_PLUGIN}.py").write_text('raise RuntimeError("this plugin is broken")\n')
    dist_info = root / f"{BROKEN_PLUGIN}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {BROKEN_PLUGIN}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[{GROUP}]\nbroken = {BROKEN_PLUGIN}:manifests\n")
    return root


@pytest.fixture
def broken_plugin_after_ours(tmp_path):
    """The broken distribution at the end of sys.path: lmms-eval reaches it after ours."""
    plugin = str(write_broken_plugin(tmp_path / "plugin"))
    sys.path.append(plugin)
    yield
    sys.path.remove(plugin)
    sys.modules.pop(BROKEN_PLUGIN, None)


def test_our_entry_point_is_the_installed_one():
    assert ENTRY_POINT in [entry_point.value for entry_point in plugin_entry_points()]


def test_a_broken_plugin_is_named_with_its_distribution_error_and_fix(broken_plugin_after_ours):
    (broken,) = find_broken_plugins(ENTRY_POINT)
    assert (broken.name, broken.value, broken.distribution) == (
        "broken",
        f"{BROKEN_PLUGIN}:manifests",
        BROKEN_PLUGIN,
    )
    assert broken.error == "RuntimeError: this plugin is broken" and not broken.before_ours
    assert "RuntimeError: this plugin is broken" in broken.describe()
    assert f"pip uninstall {BROKEN_PLUGIN}" in broken.fix()


def test_no_plugin_is_broken_without_one():
    assert find_broken_plugins(ENTRY_POINT) == []


def test_lmms_eval_stops_at_a_broken_plugin_and_ours_names_it(broken_plugin_after_ours):
    """lmms-eval's loader registers ours (reached first), then raises at the broken one; ours logged it."""
    from lmms_eval.models.registry_v2 import ModelRegistryV2

    with logged("WARNING") as messages:
        registry = ModelRegistryV2()
        with pytest.raises(RuntimeError, match="this plugin is broken"):
            registry.load_entrypoint_manifests()
    assert {"unify_random", "unify_oracle", "janus_pro"} <= set(registry.list_canonical_model_ids())
    (warning,) = [m for m in messages if "'broken'" in m]
    assert BROKEN_PLUGIN in warning and f"pip uninstall {BROKEN_PLUGIN}" in warning
    assert "lmms-eval-unify doctor" in warning


def test_manifests_still_returns_our_models_next_to_a_broken_plugin(broken_plugin_after_ours):
    assert {m.model_id for m in manifests()} >= {"unify_random", "unify_oracle"}


def _offline_env(tmp_path: Path, pythonpath: str = "") -> dict[str, str]:
    data = tmp_path / "data"
    write_puzzles(data / "uni_mmmu", 2, 2, seed=1)
    env = {"PATH": "/usr/bin:/bin", "LMMS_EVAL_UNIFY_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HOME": str(tmp_path)}  # fmt: skip
    return {**env, "PYTHONPATH": pythonpath} if pythonpath else env


def _doctor(env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [str(BIN / "lmms-eval-unify"), "doctor"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_with_a_broken_plugin_before_ours_lacks_our_model_and_doctor_names_it(tmp_path):
    """PYTHONPATH puts the broken plugin first: lmms-eval never reaches ours and rejects our model."""
    env = _offline_env(tmp_path, str(write_broken_plugin(tmp_path / "plugin")))
    command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze",
               "--output_path", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert "Failed to load model entry-point manifests: this plugin is broken" in output
    assert "Model 'unify_oracle' not found" in output
    assert not list(tmp_path.rglob("*_results.json"))

    doctor = _doctor(env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    report = doctor.stdout
    assert f"model plugin 'broken' ({BROKEN_PLUGIN}:manifests, distribution {BROKEN_PLUGIN})" in report
    assert "RuntimeError: this plugin is broken" in report and f"pip uninstall {BROKEN_PLUGIN}" in report
    assert "it comes before ours" in report and "unknown model" in report
    assert "lmms-eval does not serve our models" in report and "unify_oracle" in report


@pytest.mark.slow
def test_cli_runs_our_model_when_ours_loads_before_the_broken_plugin(tmp_path):
    """The broken plugin at the end of sys.path: our model runs, and our plugin's warning names the broken one."""
    plugin = write_broken_plugin(tmp_path / "plugin")
    env = _offline_env(tmp_path)
    cli = f"import sys; sys.path.append({str(plugin)!r}); from lmms_eval.cli.dispatch import main; sys.exit(main())"
    command = [sys.executable, "-c", cli, "--model", "unify_oracle", "--tasks", "uni_mmmu_maze",
               "--output_path", str(tmp_path / "out")]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert f"model plugin 'broken' ({BROKEN_PLUGIN}:manifests, distribution {BROKEN_PLUGIN})" in output
    assert next((tmp_path / "out").rglob("*_results.json")).is_file()


@pytest.mark.slow
def test_doctor_passes_without_a_broken_plugin(tmp_path):
    doctor = _doctor(_offline_env(tmp_path))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "lmms-eval serves all" in doctor.stdout and "every model plugin loads" in doctor.stdout
