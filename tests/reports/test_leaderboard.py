"""`lmms-eval-unify leaderboard` on lmms-eval-format result folders (synthetic and from the real CLI)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.reports import boards as bd
from lmms_eval_unify.reports.leaderboard import DEFAULT_PAIRS, load_pairs, main, relabel_pairs
from lmms_eval_unify.testing.synthetic import benchmark_rows, write_run

TABLE2_HEADER = (
    "| Model | SIPU | MITIU | VPU | Und. Avg | CIVG | FIR | TIE | TIG | TVG | VP | Gen. Avg "
    "| IEE | CSQ | AL | SD | VCoT | Unify Avg | MME-U |"
)


def gapeval_tasks(und_correct: list[int], gen_correct: list[int]) -> dict:
    tasks = {}
    for category in ge.CATEGORIES:
        und, gen = ge.task_names(category)
        tasks[und] = [{"correct": c} for c in und_correct]
        tasks[gen] = [{"correct": c} for c in gen_correct]
    return tasks


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A base VLM (cannot generate images) and a unified model paired with it."""
    root = tmp_path / "runs"
    write_run(
        root,
        "base-vlm",
        {
            "mme_unify_sipu": [{"acc": 1}, {"acc": 0}, {"acc": 1}, {"acc": 1}],
            "mme_unify_tig": [{"unsupported": True}] * 2,
            **{ug.task_name(s): [{"acc": 1.0}, {"acc": 0.0}] for s in ug.SUBTASKS},
            **gapeval_tasks([1, 1, 0, 0], [0, 0, 0, 0]),
        },
    )
    write_run(
        root,
        "uni-model",
        {
            "mme_unify_sipu": [{"acc": 1}] * 4,
            "mme_unify_tig": [{"clip_i": 0.6, "clip_t": 30.0}, {"clip_i": 0.8, "clip_t": 20.0}],
            "mme_unify_iee": [
                {"text_correct": 1, "image_correct": 1},
                {"text_correct": 1, "image_correct": 0},
            ],
            **{ug.task_name(s): [{"acc": 1.0}, {"acc": 1.0}] for s in ug.SUBTASKS},
            **{ug.task_name(s, "_gta"): [{"acc": float(s == "chartqa")}, {"acc": 1.0}] for s in ug.SUBTASKS},
            "uni_mmmu_maze": [
                {"text_step_acc": 1.0, "text_sample_acc": 1.0, "img_step_acc": 0.5, "img_sample_acc": 0.0}
            ],
            **gapeval_tasks([1, 1, 1, 0], [1, 0, 1, 0]),
        },
    )
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(yaml.safe_dump({"pairs": {"uni-model": "base-vlm"}}))
    return root, pairs


def approx(expected: float):
    """CSV values are written with 4 decimals."""
    return pytest.approx(expected, abs=1e-4)


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return {row["model"]: row for row in csv.DictReader(f)}


def run(args: list[str]) -> int:
    return main([str(a) for a in args])


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


def test_mme_u_scores_and_unsupported_cells(runs, tmp_path):
    root, pairs = runs
    assert (
        run([root, "--benchmark", "mme_unify", "-o", tmp_path / "b", "--no-plots", "--bootstrap", 200]) == 0
    )
    rows = read_csv(tmp_path / "b" / "mme_unify_table2.csv")
    uni, base = rows["uni-model"], rows["base-vlm"]
    assert float(uni["TIG"]) == approx((70.0 + 25.0) / 2)
    assert float(uni["Gen. Avg"]) == approx(47.5 / 6)
    assert float(uni["Unify Avg"]) == approx(75.0 / 5)
    assert float(uni["MME-U"]) == approx((100 / 3 + 47.5 / 6 + 15.0) / 3)
    assert base["TIG"] == "-" and base["Gen. Avg"] == "-"
    assert float(base["MME-U"]) == approx(75.0 / 9)  # missing generation/unify count as 0
    assert float(base["SIPU ci_low"]) <= 75.0 <= float(base["SIPU ci_high"])
    table3 = read_csv(tmp_path / "b" / "mme_unify_table3.csv")["uni-model"]
    assert (table3["IEE Text"], table3["IEE Image"], table3["IEE Acc+"]) == ("100.0000", "50.0000", "50.0000")
    markdown = (tmp_path / "b" / "leaderboard.md").read_text()
    assert "| base-vlm | 75.00 | - | - | 25.00 | - | - | - | - |" in markdown


def test_unig2u_table4_gains_against_the_paired_base(runs, tmp_path):
    root, pairs = runs
    assert run([root, "--benchmark", "unig2u", "--pairs", pairs, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert list(table4) == ["base-vlm *", "uni-model (direct)", "uni-model (GtA)"]
    assert float(table4["base-vlm *"]["Overall"]) == 50.0 and float(table4["base-vlm *"]["Δ"]) == 0.0
    assert float(table4["uni-model (direct)"]["Δ"]) == approx(50.0)
    gta = table4["uni-model (GtA)"]  # 50 on every subtask except chartqa (100)
    assert float(gta["Chart & Table"]) == 100.0 and float(gta["Physics Reasoning"]) == 50.0
    assert float(gta["Overall"]) == approx(50 + 50 / 30)  # chartqa is 100 of the paper's 3000 samples
    assert float(gta["Δ"]) == approx(50 / 30)
    gains = read_csv(tmp_path / "b" / "unig2u_gains.csv")
    assert float(gains["uni-model: Δ_Direct (vs base-vlm)"]["Overall"]) == approx(50.0)
    delta_gta = gains["uni-model: Δ_GtA (GtA − Direct)"]
    assert float(delta_gta["Overall"]) == approx(50 / 30 - 50) and float(delta_gta["Chart & Table"]) == 0.0
    # Paired bootstrap: the base's noise is shared with the unified model's, so the Δ interval is valid.
    low, high = (float(table4["uni-model (direct)"][f"Δ {s}"]) for s in ("ci_low", "ci_high"))
    assert low <= 50.0 <= high


def test_unpaired_models_get_no_delta(runs, tmp_path):
    root, _ = runs
    empty = tmp_path / "none.yaml"
    empty.write_text("pairs: {}\n")
    assert run([root, "--benchmark", "unig2u", "--pairs", empty, "-o", tmp_path / "b", "--no-plots"]) == 0
    table4 = read_csv(tmp_path / "b" / "unig2u_table4.csv")
    assert {r["Δ"] for r in table4.values()} == {"-"}


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
    assert (
        run([graded_runs, "--benchmark", "mme_unify", "--split-half", "-o", tmp_path / "b", "--no-plots"])
        == 0
    )
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


def test_default_pairs_file_is_the_papers_table4_pairing():
    pairs = load_pairs(DEFAULT_PAIRS)
    assert len(pairs) == 21 and pairs["OmniGen2"] == "qwen2.5-vl-7b" and pairs["bagel"] == "llava-onevision"


TINY_METRICS = {
    "clip_choice": {"backbone": "tiny", "weights": "random"},
    "clip_score": {"backbone": "tiny", "weights": "random"},
}


@pytest.mark.slow
def test_result_folders_written_by_the_real_lmms_eval_cli(tmp_path):
    """Our MME-Unify SIPU and IEE tasks on generated data, run by the oracle through the real CLI."""
    from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate

    generate(tmp_path / "data", 5, seed=1)
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


def test_a_failed_gap_fit_leaves_gap_cells_empty(runs, tmp_path, monkeypatch, capsys):
    root, _ = runs
    monkeypatch.setattr(
        "lmms_eval_unify.reports.leaderboard.GAP_FIT_CODE", "import sys; sys.exit('no torch')"
    )
    assert run([root, "--benchmark", "gapeval", "-o", tmp_path / "b", "--no-plots"]) == 0
    assert "no torch" in capsys.readouterr().err
    row = read_csv(tmp_path / "b" / "gapeval_table2.csv")["uni-model"]
    assert row["Overall Gap"] == "-" and row["reasoning Und."] == "75.0000"


def test_gap_variant_is_selectable_and_reported(runs, tmp_path, capsys):
    root, _ = runs
    args = [root, "--benchmark", "gapeval", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "official"]) == 0
    assert "official variant" in capsys.readouterr().out
    assert run([*args, "-o", tmp_path / "stable", "--gap-variant", "stable"]) == 0
    assert "stable variant" in capsys.readouterr().out
    official = read_csv(tmp_path / "official" / "gapeval_table2.csv")["uni-model"]["Overall Gap"]
    stable = read_csv(tmp_path / "stable" / "gapeval_table2.csv")["uni-model"]["Overall Gap"]
    assert 0.0 <= float(stable) <= 100.0 and official != stable


def test_mme_variant_official_reads_the_official_tasks(tmp_path, capsys):
    root = tmp_path / "runs"
    vcot = {"n_steps": 4, "image_steps": 3, "action_steps_correct": 4, "coordinate_steps_correct": 4}
    write_run(
        root,
        "m",
        {
            "mme_unify_sipu": [{"acc": 1}, {"acc": 0}],  # understanding: the same task in both variants
            "mme_unify_vcot": [
                {**vcot, "image_steps_correct": 3},
                {
                    **vcot,
                    "n_steps": 2,
                    "image_steps": 1,
                    "action_steps_correct": 2,
                    "coordinate_steps_correct": 2,
                    "image_steps_correct": 1,
                },
            ],
            "mme_unify_vcot_official": [
                {**vcot, "image_steps": 4, "coordinate_steps_correct": 0, "image_steps_correct": 3},
                {
                    **vcot,
                    "n_steps": 2,
                    "image_steps": 2,
                    "action_steps_correct": 2,
                    "coordinate_steps_correct": 0,
                    "image_steps_correct": 1,
                },
            ],
            "mme_unify_iee": [{"text_correct": 1, "image_correct": 0}],
            "mme_unify_iee_official": [{"text_correct": 0, "image_correct": 0}],
        },
    )
    args = [root, "--benchmark", "mme_unify", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "c"]) == 0
    assert run([*args, "--variant", "official", "-o", tmp_path / "o"]) == 0
    corrected = read_csv(tmp_path / "c" / "mme_unify_table2.csv")["m"]
    official = read_csv(tmp_path / "o" / "mme_unify_table2_official.csv")["m"]
    assert corrected["SIPU"] == official["SIPU"] == "50.0000"
    # corrected: (6/6 + 6/6 + 4/4) -> 100; official (Evaluate_VSP.py): K = 4, 2 mazes -> 8 slots per aspect,
    # actions 6/8, coordinates 0/8, images 4/8 -> (75 + 0 + 50) / 3
    assert float(corrected["VCoT"]) == approx(100.0)
    assert float(official["VCoT"]) == approx(125 / 3)
    assert float(corrected["IEE"]) == approx(50.0) and float(official["IEE"]) == approx(0.0)
    printed = capsys.readouterr().out
    assert "MME-Unify (Table 2), official variant" in printed
    assert "Scoring variant: official" in printed and "up to 100.1" in printed


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
    pairs.write_text(
        yaml.safe_dump({"pairs": {}, "labels": {"uni-model": "Uni", "./local/my_model": "Mine"}})
    )
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


def test_unig2u_pairs_may_name_recorded_or_shown_labels():
    shown = {"/w/OmniGen2": "OmniGen2", "qwen": "Qwen2.5-VL"}
    assert relabel_pairs({"/w/OmniGen2": "qwen", "other": "Qwen2.5-VL"}, shown) == {
        "OmniGen2": "Qwen2.5-VL", "other": "Qwen2.5-VL"
    }  # fmt: skip


def test_gap_convergence_is_shown_per_cell_and_warned(runs, tmp_path, capsys):
    root, _ = runs
    args = [root, "--benchmark", "gapeval", "--no-plots", "--bootstrap", 0]
    assert run([*args, "-o", tmp_path / "official"]) == 0
    out, err = capsys.readouterr()
    flags = read_csv(tmp_path / "official" / "gapeval_gap_convergence.csv")["uni-model"]
    assert {flags[f"{c} {ge.GAP_CONVERGED}"] for c in ge.CATEGORIES} == {"0.0000"}  # fixed AdamW budget
    assert "Gap fit not converged" in err and "uni-model / reasoning" in err
    assert "Gap fit not converged" in out  # the board's note
    assert run([*args, "-o", tmp_path / "stable", "--gap-variant", "stable"]) == 0
    out, err = capsys.readouterr()
    flags = read_csv(tmp_path / "stable" / "gapeval_gap_convergence.csv")["uni-model"]
    assert {flags[f"{c} {ge.GAP_CONVERGED}"] for c in ge.CATEGORIES} == {"1.0000"}
    assert "not converged" not in err + out


def test_gap_not_converged_names_each_cell():
    gaps = {
        "m": {f"{c} {ge.GAP_CONVERGED}": float(c != "reasoning") for c in ge.CATEGORIES},
        "n": {f"{c} {ge.GAP_CONVERGED}": 1.0 for c in ge.CATEGORIES},
    }
    stream = io.StringIO()
    (line,) = bd.gap_not_converged(gaps, "stable", warn=stream)
    assert "1 cell(s): m / reasoning (" in line and line in stream.getvalue()
    assert bd.gap_not_converged({"n": gaps["n"]}, "stable", warn=stream) == []
