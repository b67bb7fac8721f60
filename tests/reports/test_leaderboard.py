"""`lmms-eval-unify leaderboard` on lmms-eval-format result folders (synthetic and from the real CLI): what
every benchmark shares (outputs, resampling, labels, the benchmark interface). Each benchmark's own tables
are tested in tests/benchmarks/<b>/test_leaderboard.py."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from leaderboard_runs import approx, read_csv, run, write_configured_run, write_runs

from lmms_eval_unify.benchmarks import BENCHMARKS, entry, paper_score, part
from lmms_eval_unify.reports import leaderboard as lb
from lmms_eval_unify.reports.boards import BenchmarkLeaderboard, Board, Options
from lmms_eval_unify.run.provenance import run_provenance
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

TABLE2_HEADER = (
    "| Model | SIPU | MITIU | VPU | Und. Avg | CIVG | FIR | TIE | TIG | TVG | VP | Gen. Avg "
    "| IEE | CSQ | AL | SD | VCoT | Unify Avg | MME-U |"
)


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM (cannot generate images) and a unified model paired with it, on every benchmark."""
    return write_runs(tmp_path)


@pytest.mark.subprocess
def test_all_benchmarks_markdown_csv_html_and_figures(runs, tmp_path, capsys):
    root, pairs = runs
    out = tmp_path / "board"
    assert run([root, "--pairs", pairs, "-o", out, "--bootstrap", 100]) == 0
    printed = capsys.readouterr().out
    assert TABLE2_HEADER in printed
    for title in ("MME-Unify (Table 2)", "UniG2U-Bench (Table 4)", "Uni-MMMU (Table 2)", "GapEval (Table 2)"):
        assert f"### {title}" in printed
    page = (out / "leaderboard.html").read_text()
    assert page.count("data:image/png;base64,") == len(list(out.glob("figure_*.png"))) >= 7
    for png in out.glob("figure_*.png"):
        assert png.with_suffix(".svg").is_file() and png.with_suffix(".pdf").is_file()
    tex = (out / "leaderboard.tex").read_text()
    assert tex.count("\\begin{tabular}") == tex.count("\\end{table}") == printed.count("### ")
    assert "\\caption{MME-Unify (Table 2)}" in tex and "base-vlm &" in tex
    assert "GapEval gap vs ability" in page and "Spearman" in page
    assert printed == (out / "leaderboard.md").read_text() + "\n"
    gap = read_csv(out / "gapeval_table2.csv")
    for model in ("base-vlm", "uni-model"):
        assert 0.0 <= float(gap[model]["Overall Gap"]) <= 100.0
        assert gap[model]["reasoning Succ."] == ("0.0000" if model == "base-vlm" else "50.0000")
    assert read_csv(out / "uni_mmmu_table2.csv")["uni-model"]["Maze T step"] == "100.0000"


REPORT_COMMANDS = {
    "leaderboard": ["{runs}", "--pairs", "{pairs}", "-o", "{out}", "--bootstrap", "10"],
    "gallery": ["{runs}", "-o", "{out}"],
    "export": ["{runs}", "--benchmark", "uni_mmmu", "--out", "{out}"],
}


@pytest.mark.subprocess
@pytest.mark.parametrize("command", sorted(REPORT_COMMANDS))
def test_commands_over_saved_results_never_import_torch(runs, tmp_path, command):
    """Reading saved results, figures and the manifest included, loads no torch: importing it took 0.6 of the
    0.9 GB the 100-run leaderboard peaked at (the Gap fit runs in its own child process)."""
    root, pairs = runs
    argv = [a.format(runs=root, pairs=pairs, out=tmp_path / "out") for a in REPORT_COMMANDS[command]]
    code = (
        f"import sys; from lmms_eval_unify.cli import main; code = main({[command, *argv]!r}); "
        "print('torch' in sys.modules, 'transformers' in sys.modules); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["False", "False"]


@pytest.fixture
def graded_runs(tmp_path) -> Path:
    """Four models of clearly different skill on the full-size MME-Unify (synthetic samples)."""
    rng = np.random.default_rng(0)
    for skill in (0.2, 0.4, 0.6, 0.8):
        write_run(tmp_path / "graded", f"skill-{skill}", benchmark_rows("mme_unify", skill, rng))
    return tmp_path / "graded"


def test_bootstrap_is_seeded(graded_runs, tmp_path):
    outputs = []
    for seed, name in ((0, "a"), (0, "b"), (1, "c")):
        args = [graded_runs, "--benchmark", "mme_unify", "--seed", seed, "-o", tmp_path / name, "--no-plots"]
        assert run(args) == 0
        outputs.append((tmp_path / name / "mme_unify_table2.csv").read_text())
    assert outputs[0] == outputs[1] != outputs[2]
    rows = read_csv(tmp_path / "a" / "mme_unify_table2.csv")
    for row in rows.values():
        assert float(row["MME-U ci_low"]) < float(row["MME-U"]) < float(row["MME-U ci_high"])


def test_split_half_reports_rank_agreement(graded_runs, tmp_path):
    assert run([graded_runs, "--benchmark", "mme_unify", "--split-half", "-o", tmp_path / "b", "--no-plots"]) == 0
    agreement = read_csv(tmp_path / "b" / "mme_unify_split_half_agreement.csv")
    assert set(agreement) == {f"{c} (n=4)" for c in ("Und. Avg", "Gen. Avg", "Unify Avg", "MME-U")}
    assert float(agreement["MME-U (n=4)"]["Kendall τ_b"]) == 1.0  # well-separated models keep their order
    halves = read_csv(tmp_path / "b" / "mme_unify_split_half.csv")
    assert len(halves) == 8 and "Split B / skill-0.8" in halves


def test_split_half_with_ties_reports_no_correlation(runs, tmp_path):
    root, _ = runs
    assert run([root, "--benchmark", "mme_unify", "--split-half", "-o", tmp_path / "b", "--no-plots"]) == 0
    agreement = read_csv(tmp_path / "b" / "mme_unify_split_half_agreement.csv")
    assert agreement["Gen. Avg (n=1)"]["Kendall τ_b"] == "-"


def test_errors(tmp_path, capsys):
    assert run([tmp_path / "missing"]) == 2
    write_run(tmp_path / "other", "m", {"mmmu_val": [{"acc": 1}]})
    assert run([tmp_path / "other", "-o", tmp_path / "b", "--no-plots"]) == 1
    assert "no samples for --benchmark all" in capsys.readouterr().err


TINY_METRICS = {
    "clip_choice": {"backbone": "tiny", "weights": "random"},
    "clip_score": {"backbone": "tiny", "weights": "random"},
}


@pytest.mark.slow
def test_result_folders_written_by_the_real_lmms_eval_cli(tmp_path):
    """Our MME-Unify SIPU and IEE tasks on generated data (``data generate``), run by the oracle through the real
    CLI: the run records the data it read, every cell says it is generated data, and ``--strict`` refuses it
    (issue 33 item 1: the table was clean and the manifest named the Hub repository)."""
    generate = [sys.executable, "-m", "lmms_eval_unify.cli", "data", "generate", "mme_unify"]
    subprocess.run([*generate, "--out", str(tmp_path / "data"), "--n", "5", "--seed", "1"], check=True, timeout=300)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "LMMS_EVAL_UNIFY_DATA_DIR": str(tmp_path / "data"),
        "LMMS_EVAL_UNIFY_MME_UNIFY_METRICS": json.dumps(TINY_METRICS),
    }
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    cli = [
        sys.executable,
        "-m",
        "lmms_eval",
        "--model",
        "unify_oracle",
        "--tasks",
        "mme_unify_sipu,mme_unify_iee",
    ]
    cli += ["--output_path", str(tmp_path / "out"), "--log_samples"]
    subprocess.run(cli, check=True, capture_output=True, env=env, cwd=tmp_path, timeout=300)
    assert run([tmp_path / "out", "--benchmark", "mme_unify", "-o", tmp_path / "b", "--no-plots"]) == 0
    row = read_csv(tmp_path / "b" / "mme_unify_table2.csv")["unify_oracle"]
    assert float(row["SIPU"]) == approx(100.0)
    assert float(row["IEE"]) == approx(100.0)
    assert float(row["MME-U"]) == approx((100.0 / 3 + 100.0 / 5) / 3)  # missing subtasks count as 0
    assert "generated data (lmms-eval-unify data generate)" in row["SIPU caveats"]
    (results_file,) = (tmp_path / "out").rglob("*_results.json")
    provenance = json.loads(results_file.read_text())["lmms_eval_unify"]
    assert {k: v for k, v in provenance.items() if k != "data"} == run_provenance()
    assert sorted(provenance["data"]) == ["mme_unify_iee", "mme_unify_sipu"]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    sipu = manifest["rows"]["unify_oracle"]["tasks"]["mme_unify_sipu"]
    assert (sipu["n"], sipu["n_dataset"], sipu["scorer_version"], sipu["variant"]) == (5, 5, "2.0", "corrected")
    assert {k: sipu["dataset"][k] for k in ("kind", "seed", "n", "file")} == {
        "kind": "generated", "seed": 1, "n": 5, "file": "mme_unify/sipu/test.parquet"}  # fmt: skip
    assert run([tmp_path / "out", "--benchmark", "mme_unify", "-o", tmp_path / "s", "--no-plots", "--strict"]) == 3

    # the same configuration again with --limit 2: its newer SIPU replaces the full one, marked as a subset
    cli[cli.index("--output_path") + 1] = str(tmp_path / "limited")
    subprocess.run([*cli, "--limit", "2"], check=True, capture_output=True, env=env, cwd=tmp_path, timeout=300)
    board = [tmp_path / "out", tmp_path / "limited", "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 0]
    assert run([*board, "-o", tmp_path / "b2"]) == 0
    caveats = read_csv(tmp_path / "b2" / "mme_unify_table2.csv")["unify_oracle"]["SIPU caveats"]
    assert "mme_unify_sipu: 2 of 5 items (--limit 2)" in caveats and "(seed 1, 5 items per subtask)" in caveats
    assert run([*board, "-o", tmp_path / "b3", "--strict"]) == 3


def test_labels_from_a_file_or_the_pairs_file_never_raw_paths(runs, tmp_path):
    root, _ = runs
    write_run(root, "/ckpts/run7/Janus-Pro-1B", {"uni_mmmu_maze": [{"text_step_acc": 0.5}]})
    write_run(root, "./local/my_model", {"uni_mmmu_maze": [{"text_step_acc": 0.25}]})
    args = [root, "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "plain"]) == 0
    assert sorted(read_csv(tmp_path / "plain" / "uni_mmmu_table2.csv")) == [
        "Janus-Pro-1B", "my_model", "uni-model"
    ]  # fmt: skip
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump({"labels": {"/ckpts/run7/Janus-Pro-1B": "Janus-Pro (ours)"}}))
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": {}, "labels": {"uni-model": "Uni", "./local/my_model": "Mine"}}))
    assert run([*args, "-o", tmp_path / "named", "--labels", labels, "--pairs", pairs]) == 0
    rows = read_csv(tmp_path / "named" / "uni_mmmu_table2.csv")
    assert sorted(rows) == ["Janus-Pro (ours)", "Mine", "Uni"]
    assert rows["Janus-Pro (ours)"]["Maze T step"] == "50.0000"
    assert "Janus-Pro (ours)" in (tmp_path / "named" / "leaderboard.tex").read_text()


def test_labels_that_clash_are_refused(runs, tmp_path, capsys):
    root, _ = runs
    write_run(root, "/a/model", {"uni_mmmu_maze": [{"text_step_acc": 0.5}]})
    write_run(root, "/b/model", {"uni_mmmu_maze": [{"text_step_acc": 0.5}]})
    assert run([root, "--benchmark", "uni_mmmu", "--no-plots", "-o", tmp_path / "b"]) == 2
    assert "several models would share a label (model <- /a/model, /b/model)" in capsys.readouterr().err


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_benchmark_implements_the_leaderboard_interface(benchmark):
    module = part(benchmark, "leaderboard")
    interface = {
        name: list(inspect.signature(fn).parameters)[1:]  # without `self`
        for name, fn in inspect.getmembers(BenchmarkLeaderboard, inspect.isfunction)
        if not name.startswith("_")
    }
    assert set(interface) == {"add_arguments", "labels", "start"}
    for name, parameters in interface.items():
        assert list(inspect.signature(getattr(module, name)).parameters) == parameters, name


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_paper_score_is_a_function_of_the_benchmarks_own_paper_module(benchmark):
    roll_up = paper_score(benchmark)
    assert callable(roll_up)
    assert roll_up.__module__ == f"{entry(benchmark).__name__}.paper"


def test_every_benchmark_starts_before_any_finishes_and_prints_in_registry_order(monkeypatch):
    calls = []

    def leaderboard_of(benchmark):
        def start(models, shown, args, options, plots):
            calls.append(("start", benchmark))

            def finish():
                calls.append(("finish", benchmark))
                return [Board(benchmark, benchmark, [], [])], [(benchmark, None)]

            return finish

        return SimpleNamespace(start=start)

    monkeypatch.setattr(lb, "leaderboard_of", leaderboard_of)
    chosen = BENCHMARKS[::-1]
    boards, figures = lb.build({}, {}, argparse.Namespace(), chosen, Options(), plots=True)
    assert calls == [*(("start", b) for b in BENCHMARKS), *(("finish", b) for b in BENCHMARKS)]
    assert [b.key for b in boards] == [title for title, _ in figures] == list(BENCHMARKS)


def test_two_configurations_of_one_model_are_two_rows_labelled_by_the_differing_argument(tmp_path, capsys):
    """Two runs of one adapter with different --model_args, each in its own --output_path (issue 24)."""
    write_configured_run(tmp_path / "a", "echo_painter", "seed=1", {"uni_mmmu_maze": [{"text_step_acc": 1.0}]})
    write_configured_run(tmp_path / "b", "echo_painter", "seed=2", {"uni_mmmu_maze": [{"text_step_acc": 0.0}]})
    args = [tmp_path / "a", tmp_path / "b", "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "plain"]) == 0
    rows = read_csv(tmp_path / "plain" / "uni_mmmu_table2.csv")
    assert {m: r["Maze T step"] for m, r in rows.items()} == {
        "echo_painter (seed=1)": "100.0000",
        "echo_painter (seed=2)": "0.0000",
    }
    err = capsys.readouterr().err
    assert "echo_painter ran in 2 configurations" in err
    seed_2 = err.split("echo_painter (seed=2) = ")[1].split()[0].rstrip(";")  # echo_painter@<hash>
    # --labels addresses a configuration by its automatic label or by name@hash, or every one by the name
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump({"labels": {"echo_painter (seed=1)": "Painter s1", seed_2: "Painter s2"}}))
    assert run([*args, "-o", tmp_path / "named", "--labels", labels]) == 0
    assert sorted(read_csv(tmp_path / "named" / "uni_mmmu_table2.csv")) == ["Painter s1", "Painter s2"]
    labels.write_text(yaml.safe_dump({"labels": {"echo_painter": "Painter"}}))
    assert run([*args, "-o", tmp_path / "renamed", "--labels", labels]) == 0
    assert sorted(read_csv(tmp_path / "renamed" / "uni_mmmu_table2.csv")) == ["Painter (seed=1)", "Painter (seed=2)"]


GEOMETRY_FAILED = {"img_acc": 0.0, "text_acc": 0.0, "invalid_outputs": "judge_failed"}
GEOMETRY_RIGHT = {"img_acc": 1.0, "text_acc": 1.0, "invalid_outputs": ""}


def test_a_judge_outage_prints_no_number_and_a_partial_one_marks_its_share(tmp_path):
    write_run(tmp_path / "runs", "outage", {"uni_mmmu_geometry": [GEOMETRY_FAILED] * 4})
    write_run(tmp_path / "runs", "partial", {"uni_mmmu_geometry": [GEOMETRY_FAILED, *[GEOMETRY_RIGHT] * 3]})
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "--bootstrap", 50, "-o", out]) == 0
    markdown = (out / "leaderboard.md").read_text()
    row = next(line for line in markdown.splitlines() if line.startswith("| outage |"))
    assert row.split(" | ")[7:9] == ["—", "—"]  # Geo I, Geo T: never 0.00
    assert "— outage: no sample scored (judge_failed)." in markdown  # on every column it shows: Geo I, Geo T
    assert "| partial |" in markdown and "75.00† | 75.00† |" in markdown
    assert "† partial: some samples invalid (judge_failed)." in markdown  # how many: the CSV
    rows = read_csv(out / "uni_mmmu_table2.csv")
    outage, partial = rows["outage"], rows["partial"]
    assert (outage["Geo I"], outage["Geo I n"], outage["Geo I invalid"], outage["Geo I ci_low"]) == ("-", "4", "4", "-")
    assert (partial["Geo T"], partial["Geo T n"], partial["Geo T invalid"]) == ("75.0000", "4", "1")
    assert "— outage" in (out / "leaderboard.html").read_text()
    tex = (out / "leaderboard.tex").read_text()
    assert r"outage & - & - & -/- & -/- & -/- & -/- & --- & --- &" in tex and r"75.00$^\dagger$" in tex


def test_intervals_are_clipped_to_the_scale_of_the_score(tmp_path):
    """A CLIP-scored subtask whose raw logits go below 0 (e.g. random CLIP weights): 0-100 all the same."""
    tig = [{"clip_i": 0.9, "clip_t": 30.0}, {"clip_i": 0.0, "clip_t": -60.0}] * 2  # samples score 60 and -30
    write_run(tmp_path / "runs", "m", {"mme_unify_tig": tig})
    out = tmp_path / "b"
    assert run([tmp_path / "runs", "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 200, "-o", out]) == 0
    row = read_csv(out / "mme_unify_table2.csv")["m"]
    assert float(row["TIG"]) == approx(15.0)
    assert float(row["TIG ci_low"]) == 0.0 < float(row["TIG"]) < float(row["TIG ci_high"]) <= 100.0


@pytest.mark.parametrize("count", [1, 17, 100, 1234])
def test_figure_files_sort_in_figure_order(count):
    stems = [lb.figure_stem(i, count) for i in range(count)]
    assert sorted(stems) == stems and len(set(stems)) == count and stems[0].startswith("figure_0")
