"""The scripts under ``bench/`` stay runnable: each one imports against the current package, and the scoring
bench measures a real (small) offline run end to end."""

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))
"""The bench scripts (``_*.py`` are modules they share)."""


def test_bench_folder_has_scripts():
    assert len(SCRIPTS) >= 7


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_imports(script: Path, monkeypatch):
    """Module-level code (imports of the package, of test helpers) runs, not the measurement; each script
    says how to run it in its docstring."""
    monkeypatch.syspath_prepend(str(BENCH))
    namespace = runpy.run_path(str(script), run_name="bench_import_check")
    assert namespace["__doc__"] and "python" in namespace["__doc__"] + script.read_text()


@pytest.mark.slow
def test_scoring_bench_measures_an_oracle_run(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    env = offline_env(data)
    generate = [str(BIN / "lmms-eval-unify"), "data", "generate", "uni_mmmu", "--out", str(data), "--n", "4"]
    subprocess.run(generate, env=env, check=True, capture_output=True)
    run = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", "uni_mmmu_maze,uni_mmmu_sliding",
           "--output_path", str(out), "--log_samples"]  # fmt: skip
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    bench = [sys.executable, str(BENCH / "scoring_bench.py"), str(data), str(out), "--repeats", "1",
             "--corpus", "20"]  # fmt: skip
    done = subprocess.run(bench, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for task in ("maze", "sliding"):
        assert f"uni_mmmu_{task}: 20 corpus images" in done.stdout
        assert f"uni_mmmu_{task}: " in done.stdout and "samples/s/core" in done.stdout


@pytest.mark.subprocess
def test_generation_bench_primitive_mode_times_batched_janus_and_checks_equality(tmp_path):
    bench = [
        sys.executable,
        str(BENCH / "generation_bench.py"),
        "--primitive",
        "--batch",
        "3",
        "--images",
        "6",
    ]
    done = subprocess.run(bench, env=offline_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batch 3" in done.stdout and "batched == one-by-one for 6/6 images" in done.stdout


def test_janus_pro_1b_shape_is_the_full_architecture():
    """The GPU bench's random checkpoint: Janus-Pro-1B's layer sizes (built on the meta device, no weights)."""
    import torch
    from transformers import JanusForConditionalGeneration

    tiny_models = runpy.run_path(str(BENCH.parent / "tests" / "model_adapters" / "tiny_models.py"))
    config = tiny_models["janus_config"]("janus-pro-1b", vocab_size=60, image_token_id=4)
    with torch.device("meta"):
        model = JanusForConditionalGeneration(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(1.867e9, rel=1e-3)
    assert config.vision_config.num_image_tokens == 576 and config.vision_config.image_size == 384
    assert config.vq_config.num_embeddings == 16384 and config.text_config.num_hidden_layers == 24


@pytest.mark.subprocess
def test_ummmu_parser_parity_bench_runs_without_the_released_script(tmp_path):
    """Our side only (no ``--released``): the form table, including the new image forms, and the move-name table."""
    forms = ["standard", "JPEG q20", "noise sigma 20", "palette P (web, dithered)"]
    bench = [sys.executable, str(BENCH / "ummmu_parser_parity.py"), "--n", "1"]
    bench += [arg for form in forms for arg in ("--form", form)]
    done = subprocess.run(bench, env=offline_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| maze |", "| sliding |"))]
    cells = [row.split(" | ") for row in rows]
    assert [row[1] for row in cells[: 2 * len(forms)]] == forms * 2
    assert all(row[4:6] == ["100.0", "100.0"] for row in cells if row[1] == "standard")  # both parsers read it
    assert sum(row[1] == "padded (' up ')" for row in cells) == 2
    assert "official = released" not in done.stdout


def run_bench(script: str, tmp_path: Path, *arguments: str) -> str:
    """A bench script's stdout, run offline without the released scripts (CI has none): its own side only."""
    done = subprocess.run([sys.executable, str(BENCH / script), *arguments], env=offline_env(tmp_path),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "released" not in done.stdout
    return done.stdout


@pytest.mark.subprocess
def test_mme_unify_parity_bench_exports_and_scores_every_subtask_without_the_released_scripts(tmp_path):
    """Data, outputs (failures included), our official scores, the export (videos included) read back."""
    from lmms_eval_unify.benchmarks.mme_unify.spec import SUBTASKS

    stdout = run_bench("mme_unify_parity.py", tmp_path, "--n", "3", "--models", "2")
    exported = re.search(r"export: (\d+) files, (\d+) failed samples", stdout)
    assert exported and int(exported[1]) > 0 and int(exported[2]) > 0
    for subtask in SUBTASKS:  # a model whose outputs all failed has no score (nan); the other one has
        assert len(re.findall(rf"^{subtask} model\d: ours ", stdout, re.MULTILINE)) == 2, subtask
        assert re.search(rf"^{subtask} model\d: ours {subtask}[ \w.+-]*\d", stdout, re.MULTILINE), subtask


@pytest.mark.subprocess
def test_uni_mmmu_export_parity_bench_runs_without_the_released_evaluator(tmp_path):
    stdout = run_bench("uni_mmmu_export_parity.py", tmp_path, "--n", "2", "--models", "2")
    assert re.search(r"export: \d+ files, \d+ failed samples", stdout)
    for puzzle in ("maze", "sliding", "jigsaw"):
        assert f"{puzzle} model0: ours" in stdout and f"{puzzle} model1: ours" in stdout


@pytest.mark.subprocess
def test_gapeval_export_parity_bench_runs_without_the_released_script(tmp_path):
    stdout = run_bench("gapeval_export_parity.py", tmp_path, "--models", "2")
    assert "export: 2 models" in stdout and "our fit on the exported rows = the leaderboard's gaps: True" in stdout
    assert re.search(r"^model1: ours world_knowledge \d+\.\d{4}", stdout, re.MULTILINE)


@pytest.mark.subprocess
def test_gap_score_bench_times_both_variants_scales_and_checks_alone_equals_batched(tmp_path):
    stdout = run_bench("gap_score_bench.py", tmp_path, "--models", "6", "--repeats", "1", "--scaling", "4,8",
                       "--alone", "6")  # fmt: skip
    assert "official" in stdout and "stable" in stdout
    assert "bitwise equal for 6/6" in stdout


FIDELITY_QUICK = ("--tables", "3", "--draws", "1", "--table2-draws", "-1", "--json")
"""A quick run of bench/gap_score_fidelity.py: 3 random tables, one noise draw, no Table 2."""
STAND_IN_EVALUATE = """
def evaluate_model(rows, model_name, total_count, map_steps, map_lr, seed, device):
    assert (len(rows), total_count, map_steps, map_lr, seed, str(device)) == (4, 1000.0, 2000, 5e-2, 42, "cpu")
    gaps = [round(p10 + p01, 6) for _, p10, p01, _ in rows]  # a stand-in (discordance), not the authors' fit
    return {"gaps": gaps, "gap_mean": round(sum(gaps) / 4, 6)}
"""
"""A stand-in for the authors' evaluate.py (not in this repo): its ``evaluate_model`` call, another formula."""


@pytest.mark.heavy
@pytest.mark.subprocess
def test_gap_score_fidelity_bench_gives_distributions_and_says_what_it_did_not_measure(tmp_path):
    stdout = run_bench("gap_score_fidelity.py", tmp_path, *FIDELITY_QUICK)
    found = json.loads(stdout.splitlines()[-1])["random"]
    assert found["models"] == 3 and found["converged"] == {"official": 0, "stable": 3}
    for quantity in ("official_vs_stable", "noise_official", "noise_stable"):
        assert found[quantity]["cells"] == 12 and set(found[quantity]) >= {"median", "p90", "max", "over_1", "over_10"}
    assert found["noise_stable"]["max"] < 0.5 and "official_vs_authors" not in found and "noise_authors" not in found
    assert re.search(r"^\| random \| \|official − stable\| \| 12 \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", stdout, re.M)
    assert "authors' evaluate.py not given: |official − authors|" in stdout and "not measured" in stdout


@pytest.mark.heavy
@pytest.mark.subprocess
def test_gap_score_fidelity_bench_runs_the_authors_script_from_its_folder(tmp_path):
    (tmp_path / "authors").mkdir()
    (tmp_path / "authors" / "evaluate.py").write_text(STAND_IN_EVALUATE)
    bench = [
        sys.executable,
        str(BENCH / "gap_score_fidelity.py"),
        *FIDELITY_QUICK,
        "--released",
        str(tmp_path / "authors"),
    ]
    done = subprocess.run(bench, env=offline_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])["random"]
    for quantity in ("official_vs_authors", "stable_vs_authors", "noise_authors"):
        assert found[quantity]["cells"] == 12
    assert found["noise_authors"]["max"] < 1e-3  # the stand-in is smooth: 1e-6 noise moves it by ~1e-4 points
    assert found["official_vs_authors"]["max"] > 0 and "not measured" not in done.stdout


@pytest.mark.subprocess
def test_metrics_bench_times_every_metric_on_tiny_backbones(tmp_path):
    stdout = run_bench("metrics_bench.py", tmp_path, "--samples", "4", "--size", "64", "--repeats", "1",
                       "--threads", "1")  # fmt: skip
    assert "img/s" in stdout or "samples/s" in stdout


@pytest.mark.subprocess
def test_puzzle_scorer_cost_bench_times_both_scorers_and_checks_official_per_sample(tmp_path):
    """Quick mode: 2 samples, 1 round per puzzle; the official per-sample results equal the per-pixel ones."""
    stdout = run_bench("puzzle_scorer_cost.py", tmp_path, "--quick")
    for puzzle in ("maze", "sliding"):
        line = re.search(rf"^{puzzle}: CPU ms per sample .*$", stdout, re.MULTILINE)
        assert line and "official / corrected" in line[0] and line[0].endswith("official = per-pixel for 2/2 samples")


@pytest.mark.subprocess
def test_torchmetrics_cost_bench_times_clipscore_and_fid_on_the_same_weights(tmp_path):
    """Quick mode: 4 pairs of 64-px images, 1 round; the script itself asserts that both sides' values agree."""
    stdout = run_bench("torchmetrics_cost.py", tmp_path, "--quick")
    for metric in ("CLIPScore", "FID (set)"):
        assert re.search(rf"^{re.escape(metric)}: CPU ms per run .* ours / torchmetrics \d+\.\d+x", stdout, re.M)


def leaderboard_bench_numbers(tmp_path: Path, *arguments: str) -> dict:
    """The last JSON line of ``bench/leaderboard_bench.py --json``."""
    return json.loads(run_bench("leaderboard_bench.py", tmp_path, *arguments, "--json").splitlines()[-1])


@pytest.mark.subprocess
def test_leaderboard_bench_measures_a_few_runs_end_to_end(tmp_path):
    from lmms_eval_unify.reports.plots import MAX_PNG_PX

    numbers = leaderboard_bench_numbers(tmp_path, "--runs", "8")
    assert numbers["runs"] == 8 and numbers["cpu_s"] > 0 and numbers["figures"] >= 8
    assert 0 < numbers["largest_png_px"][0] <= MAX_PNG_PX[0] and 0 < numbers["largest_png_px"][1] <= MAX_PNG_PX[1]
    assert numbers["peak_rss_mb"] > 0 and numbers["child_peak_rss_mb"] > 0  # the Gap fit ran in its child
    assert numbers["tree_peak_rss_mb"] > numbers["peak_rss_mb"]  # ... while the leaderboard ran: both counted


LEADERBOARD_MAX_RSS_MB = 600
"""Peak RSS of the leaderboard process over 100 full-size runs with figures (351 MB measured here; CI's machine
has read 13% more). Importing torch alone adds ~0.6 GB (the manifest did, 1013 MB on CI), so a report command
that loads it again fails here; before issue 24: 30 runs took 2.05 GB, 100 runs were killed past 11 GB."""
TREE_MAX_RSS_MB = 1000
"""Peak RSS of the leaderboard and its Gap fit child together over the same runs: the target is 900 MB
(docs/benchmarks.md), the bound leaves room for CI's machine reading more (790 MB measured here, the child
~0.55 GB of it, torch's import ~0.5 GB; 940 MB when the child imported the reports through the leaderboard module,
held its memory until its answer was read and tore torch down on exit)."""


@pytest.mark.slow
def test_leaderboard_over_100_runs_with_figures_stays_in_bounded_memory(tmp_path):
    """The bench kills the leaderboard as soon as its RSS passes the bound (so a regression fails here rather
    than taking the machine's memory), and reports the process's own peak (VmHWM) and, sampled, that of the
    process tree with the Gap fit child."""
    numbers = leaderboard_bench_numbers(tmp_path, "--runs", "100", "--max-rss-mb", str(LEADERBOARD_MAX_RSS_MB))
    assert 0 < numbers["peak_rss_mb"] < LEADERBOARD_MAX_RSS_MB
    assert numbers["peak_rss_mb"] < numbers["tree_peak_rss_mb"] < TREE_MAX_RSS_MB
    assert numbers["figures"] > 10  # pages of every benchmark's figures


def test_every_bench_script_is_run_by_a_test():
    """Importing is not running: each script under bench/ is run end to end (on small inputs) by a test here."""
    source = Path(__file__).read_text()
    run = set(re.findall(r'BENCH / "(\w+\.py)"', source)) | set(re.findall(r'run_bench\("(\w+\.py)"', source))
    assert {s.name for s in SCRIPTS} - run == set()


# --- bench/gpu_validation.py: the device script for the first lent GPU (issue 30 item 6) ---------------------


def gpu_validation() -> dict:
    """The script's module-level names (constants, the pure requirement closure, the output parsers)."""
    return runpy.run_path(str(BENCH / "gpu_validation.py"), run_name="gpu_validation_under_test")


FAKE_INDEX = {
    "root": ("1.0", ["a>=1", "b; python_version < '3.12'", "c[x]", "d; extra == 'test'", "old-here<2",
                     "new-here>=1", "unknown-capped<3", "unknown-open>=1", "unneeded"]),
    "a": ("1.5", ["e; sys_platform == 'win32'", "f; python_version >= '3.12'", "Old_Here"]),
    "c": ("2.0", ["g; extra == 'x'", "h; extra == 'y'"]),
    "f": ("1.0", []), "g": ("1.0", ["a>=2"]), "old-here": ("1.9", []), "unknown-capped": ("2.5", []),
    "new-here": ("1.3", []),
}  # fmt: skip
"""name -> (version, Requires-Dist) of a fake index."""
FAKE_DEVICE = {"old-here": "2.1", "new-here": "1.2", "unknown-capped": None, "unknown-open": None}


def fake_closure(**options):
    asked = []

    def metadata(name, specifier):
        asked.append(name)
        return FAKE_INDEX[name]

    found = gpu_validation()["closure"](["root"], metadata, FAKE_DEVICE, prune=["unneeded"], **options)
    return found, asked


def test_gpu_validation_closure_follows_markers_and_extras_for_cpython_312_on_linux():
    found, asked = fake_closure()
    # b: python < 3.12; d: extra 'test' not asked; e: win32 only; h: extra 'y' not asked
    assert set(found.carry) == {"root", "a", "c", "f", "g", "old-here", "unknown-capped"}
    assert found.carry["a"] == "1.5" and sorted(asked) == sorted(found.carry)  # each name read once
    assert found.required_by["g"] == {"c[x]"} and found.required_by["old-here"] == {"root", "a"}


def test_gpu_validation_closure_leaves_satisfying_device_packages_and_prunes_the_unneeded():
    found, _ = fake_closure()
    assert set(found.present) == {"new-here", "unknown-open"}  # 1.2 >= 1; unknown but only a lower bound
    assert "1.2 satisfies" in found.present["new-here"] and "unknown" in found.present["unknown-open"]
    assert "old-here" in found.carry  # the device's 2.1 is excluded by <2
    assert "unknown-capped" in found.carry  # unknown version under an upper bound: carried to be sure
    assert found.pruned == {"unneeded": ["root"]}
    assert found.conflicts == ["a 1.5 chosen, but g requires '>=1,>=2'"]  # seen after a was chosen


def test_gpu_validation_closure_carries_a_forced_device_package():
    found, _ = fake_closure(force=["New_Here"])
    assert found.carry["new-here"] == "1.3" and "new-here" not in found.present


def test_gpu_validation_device_lists_are_canonical_and_the_run_needs_no_network_package_twice():
    names = gpu_validation()
    assert all(name == names["canonical"](name) for name in names["DEVICE_PACKAGES"] | set(names["DEVICE_VERSIONS"]))
    assert not set(names["NOT_NEEDED"]) & {"lmms-eval", "transformers", "diffusers", "datasets", "open-clip-torch"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", names["DEVICE_PACKAGES_DATE"])


def test_gpu_validation_reads_each_bench_figure():
    names = gpu_validation()
    line = (
        "janus_pro tiny on cpu (torch.float32), 6 images of 8 px: batch 1 54.4 img/s (0.0184 s/img), "
        "batch 3 148 img/s (0.00677 s/img), ratio 2.72; batched == one-by-one for 5/6 images (max pixel difference 3)"
    )
    figure, status, details = names["parse_generation"](line, Path())
    assert details["ratio"] == "2.72" and status == "differs" and "5/6" in figure
    figure, status, _ = names["parse_parity"](
        "qwen_image_edit: 1/2 identical\nx\nqwen_image_edit: 4/4 identical\n", Path()
    )
    assert (figure, status) == ("qwen_image_edit: 4/4 identical", "ok")
    assert names["parse_parity"]("Traceback ...", Path())[1].startswith("failed: ")


@pytest.mark.slow
@pytest.mark.subprocess
def test_gpu_validation_smoke_run_prints_one_table_with_a_figure_or_a_reason_per_step(tmp_path):
    """The device script at tiny sizes on this CPU (no wheels carried): every step is a row; the three steps that
    need no official checkout give their figure, the official-code parities say why they were skipped."""
    out = tmp_path / "out"
    command = [sys.executable, str(BENCH / "gpu_validation.py"), "run", "--device", "cpu", "--smoke", "--out",
               str(out), "--wheels", str(tmp_path / "no_wheels"), "--site", str(tmp_path / "site")]  # fmt: skip
    done = subprocess.run(command, env=offline_env(tmp_path), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    names = gpu_validation()
    rows = {row["step"]: row for row in json.loads((out / "gpu_validation.json").read_text())["rows"]}
    for step in names["STEPS"]:
        assert rows[step.name]["figure"] and rows[step.name]["status"] == "ok", rows[step.name]
        assert rows[step.name]["device"] == "cpu"
    for model in names["OFFICIAL"]:
        assert rows[f"parity: {model} (official code)"]["status"].startswith("skipped: ")
    assert all(row["figure"] or row["status"].startswith(("skipped: ", "failed: ")) for row in rows.values())
    table = done.stdout.split("| step | device | figure | status | s |")
    assert len(table) == 2 and all(f"| {name} |" in table[1] for name in rows)  # one table, every row
    assert (out / "gpu_validation.md").read_text().count("\n| ") == len(rows) + 1


# --- bench/adapter_parity.py: each adapter against its model's own code (issue 30 item 2) ------------------
PARITY_MODULES = sorted(p for p in (BENCH / "parity").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("module", PARITY_MODULES, ids=lambda p: p.name)
def test_parity_modules_import_and_say_how_to_run_them(module: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    namespace = runpy.run_path(str(module), run_name="bench_import_check")
    assert namespace["__doc__"] and "python bench/" in namespace["__doc__"] and callable(namespace["main"])


@pytest.mark.subprocess
@pytest.mark.parametrize("model", ["show_o2", "omnigen2", "janus_pro", "emu3"])
def test_adapter_parity_names_a_folder_that_is_not_the_official_checkout(model, tmp_path):
    """CI cannot fetch the official code: what it can check is that a wrong or missing checkout is named."""
    bench = [sys.executable, str(BENCH / "adapter_parity.py"), "--model", model, "--official", str(tmp_path)]
    done = subprocess.run(bench, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{tmp_path} is not a checkout of https://github.com/" in done.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_adapter_parity_of_qwen_image_edit_is_identical_to_the_model_cards_call(tmp_path):
    """The one parity bench whose reference is installed here (diffusers' pipeline, the model card's call)."""
    bench = [sys.executable, str(BENCH / "adapter_parity.py"), "--model", "qwen_image_edit", "--work", str(tmp_path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONIOENCODING": "ascii"}  # prints in an ASCII locale too
    done = subprocess.run(bench, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "qwen_image_edit: 4/4 identical", done.stdout
