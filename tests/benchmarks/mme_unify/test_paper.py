"""MME-Unify roll-ups re-derive the paper's Tables 2, 3, 4 and 9 from their parts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from paper_table_io import cell, mismatches, read_table

from lmms_eval_unify.benchmarks.mme_unify import paper as mu
from lmms_eval_unify.scoring.samples import feature_means

T2 = read_table("mme_unify_table2_overall.csv")
T3 = read_table("mme_unify_table3_unify.csv")
T9 = read_table("mme_unify_table9_generation_detail.csv")


def cells(row, columns):
    return [cell(row[c]) for c in columns]


# --- Table 2 ---------------------------------------------------------------------------------------


def test_table2_understanding_avg_only_vita_differs():
    bad = mismatches(T2, "model", lambda r: mu.understanding_score(cells(r, mu.UNDERSTANDING)), "understanding_avg")
    # VITA-1.5 prints 60.89 for (70.67 + 56.00 + 56.04) / 3 = 60.903 (paper_tables/README.md, item 9).
    assert set(bad) == {"VITA-1.5"}


def test_table2_generation_avg_counts_unsupported_as_zero():
    bad = mismatches(T2, "model", lambda r: mu.generation_score(cells(r, mu.GENERATION)), "generation_avg")
    # Anole's printed TIE/TIG disagree with its own average; RecA's 27.36 matches no set of its parts.
    assert set(bad) == {"Anole", "RecA"}


def test_table2_generation_rule_is_not_mean_over_supported_subtasks():
    def mean_of_supported(row):
        present = [v for v in cells(row, mu.GENERATION) if v is not None]
        return sum(present) / len(present) if present else None

    partial = [r for r in T2 if 0 < sum(v is not None for v in cells(r, mu.GENERATION)) < 6]
    bad = mismatches(partial, "model", mean_of_supported, "generation_avg")
    assert len(partial) >= 15 and len(bad) == len(partial)


def test_table2_unify_avg():
    bad = mismatches(T2, "model", lambda r: mu.unify_score(cells(r, mu.UNIFY)), "unify_avg")
    # Bagel CSQ printed 7.23 (Table 3: 77.23); Gemini2.0-flash-exp prints 40.74 for a mean of 39.74.
    assert set(bad) == {"Bagel", "Gemini2.0-flash-exp"}


def test_table2_mme_u_score():
    def recompute(row):
        return mu.mme_u_score(*cells(row, ("understanding_avg", "generation_avg", "unify_avg")))

    bad = mismatches(T2, "model", recompute, "mme_u_score")
    assert set(bad) == {"Show-o2", "Gemini2.0-flash-exp", "Gemini2.5-flash-image"}
    assert bad["Gemini2.5-flash-image"][1] == pytest.approx(50.35, abs=0.005)  # printed 50.04


# --- Table 9 (per-subtask generation formulas) -------------------------------------------------------

T9_FORMULAS = {
    "CIVG": lambda r: mu.video_score(*cells(r, ("CIVG_FVD_score", "CIVG_FID_score", "CIVG_CLIPSIM"))),
    "TVG": lambda r: mu.video_score(*cells(r, ("TVG_FVD_score", "TVG_FID_score", "TVG_CLIPSIM"))),
    "VP": lambda r: mu.video_score(*cells(r, ("VP_FVD_score", "VP_FID_score"))),
    "FIR": lambda r: mu.fir_score(1.0 - cell(r["FIR_1_minus_LPIPS"]) / 100.0),
    "TIE": lambda r: mu.clip_edit_score(*cells(r, ("TIE_CLIP_I", "TIE_CLIP_T"))),
    "TIG": lambda r: mu.clip_edit_score(*cells(r, ("TIG_CLIP_I", "TIG_CLIP_T"))),
}


def test_table9_subtask_scores():
    bad = set()
    for subtask, formula in T9_FORMULAS.items():
        rows = [r for r in T9 if r[f"{subtask}_avg"]]
        bad |= {(model, subtask) for model in mismatches(rows, "model", formula, f"{subtask}_avg")}
    # OmniGen TIE 43.82 vs (65.63 + 22.72)/2 = 44.18; Anole TIG 41.00 vs (60.23 + 21.24)/2 = 40.74.
    assert bad == {("OmniGen", "TIE"), ("Anole", "TIG")}


def test_table9_generation_score():
    def recompute(row):
        return mu.generation_score([cell(row[f"{s}_avg"]) for s in mu.GENERATION])

    bad = mismatches(T9, "model", recompute, "generation_score")
    assert set(bad) == {"RecA", "Gemini-2.5-flash-image"}


# --- Table 3 (unify detail) -----------------------------------------------------------------------


def test_table3_subtask_acc_is_mean_of_text_and_image():
    for subtask in mu.UNIFY_QA:
        rows = [r for r in T3 if r[f"{subtask}_acc"]]
        recompute = lambda r, s=subtask: mu.unify_acc(*cells(r, (f"{s}_text_acc", f"{s}_image_acc")))  # noqa: E731
        assert mismatches(rows, "model", recompute, f"{subtask}_acc") == {}


def test_table3_vcot_acc():
    rows = [r for r in T3 if r["VCoT_acc"]]
    cols = ("VCoT_action_acc", "VCoT_coordinate_acc", "VCoT_image_acc")
    bad = mismatches(rows, "model", lambda r: mu.vcot_acc(*cells(r, cols)), "VCoT_acc")
    assert set(bad) == {"Gemini2.0-flash-exp", "SEED-LLaMA"}


def test_table3_unify_acc_and_acc_plus():
    acc = mismatches(T3, "model", lambda r: mu.unify_score([cell(r[f"{s}_acc"]) for s in mu.UNIFY]), "unify_acc")
    # GPT-4o-Image, Anole and GILL print Table 2's parts; Gemini2.0-flash-exp prints 40.74 for 39.71.
    assert set(acc) == {"Gemini2.0-flash-exp", "GPT-4o-Image", "Anole", "GILL"}
    plus = mismatches(
        T3, "model", lambda r: mu.unify_score([cell(r[f"{s}_acc_plus"]) for s in mu.UNIFY]), "unify_acc_plus"
    )
    assert set(plus) == {"Anole", "Gemini2.0-flash-exp"}


def test_table4_split_half_mme_u():
    rows = read_table("mme_unify_table4_split_half.csv")
    for row in rows:
        row["key"] = f"{row['split']}/{row['model']}"
    recompute = lambda r: mu.mme_u_score(*cells(r, ("understanding", "generation", "unify")))  # noqa: E731
    assert set(mismatches(rows, "key", recompute, "mme_u")) == {"Overall/SEED-LLaMA", "Split A/Anole"}


# --- per-sample records ---------------------------------------------------------------------------


def test_fvd_fid_normalisation_endpoints():
    assert mu.normalised_fvd_fid(1.0) == 100.0
    assert mu.normalised_fvd_fid(1000.0) == pytest.approx(0.0)
    assert mu.normalised_fvd_fid(2000.0) < 0  # not clipped, like the official script


def means_of(task_rows):
    return {mu.task_name(s): feature_means(mu.task_features(s, rows)) for s, rows in task_rows.items()}


def test_unify_acc_plus_counts_samples_with_both_answers_correct():
    rows = [
        {"text_correct": 1, "image_correct": 1},
        {"text_correct": 1, "image_correct": 0},
        {"text_correct": 0, "image_correct": 1},
        {"text_correct": 0},  # missing image answer counts as wrong
    ]
    row = mu.table2_row(means_of({"IEE": rows}))
    assert row["IEE Text"] == 50.0 and row["IEE Image"] == 50.0
    assert row["IEE"] == 50.0 and row["IEE Acc+"] == 25.0
    assert row["Unify Avg"] == pytest.approx(10.0)  # the other four unify subtasks count as 0


def test_vcot_pools_steps_and_acc_plus_needs_every_step_right():
    rows = [
        {
            "n_steps": 2,
            "image_steps": 1,
            "action_steps_correct": 2,
            "coordinate_steps_correct": 2,
            "image_steps_correct": 1,
        },
        {
            "n_steps": 4,
            "image_steps": 3,
            "action_steps_correct": 1,
            "coordinate_steps_correct": 4,
            "image_steps_correct": 0,
        },
    ]
    row = mu.table2_row(means_of({"VCoT": rows}))
    assert row["VCoT Action"] == pytest.approx(100 * 3 / 6)
    assert row["VCoT Coordinate"] == pytest.approx(100.0)
    assert row["VCoT Image"] == pytest.approx(100 * 1 / 4)  # over the image-scored steps (n - 1 each)
    assert row["VCoT"] == pytest.approx((50 + 100 + 25) / 3)
    assert row["VCoT Acc+"] == 50.0


def means_in(variant, task_rows):
    return {mu.task_name(s): feature_means(mu.task_features(s, rows, variant)) for s, rows in task_rows.items()}


def _maze(n, action, coordinate, image, image_steps):
    return {
        "n_steps": n,
        "image_steps": image_steps,
        "action_steps_correct": action,
        "coordinate_steps_correct": coordinate,
        "image_steps_correct": image,
    }


def test_vcot_official_divides_by_longest_maze_times_mazes():
    # Evaluate_VSP.py: step_metrics has one entry per step index of any maze (0..K-1, K = longest maze =
    # 5) and each entry's 'total' is the number of mazes (2), so every aspect is sum(correct) / (5 * 2).
    official_rows = [_maze(3, 3, 0, 2, 3), _maze(5, 5, 1, 4, 5)]
    row = mu.table2_row(means_in("official", {"VCoT": official_rows}))
    assert row["VCoT Action"] == pytest.approx(100 * 8 / 10)
    assert row["VCoT Coordinate"] == pytest.approx(100 * 1 / 10)
    assert row["VCoT Image"] == pytest.approx(100 * 6 / 10)
    assert row["VCoT"] == pytest.approx((80 + 10 + 60) / 3)
    assert row["VCoT Acc+"] == 0.0  # "Finish" (n images for n-1 Step_k) is never image-right
    # corrected pools the steps: 8/8 actions, 1/8 coordinates, images over the n-1 drawn maps (6/6)
    corrected_rows = [_maze(3, 3, 0, 2, 2), _maze(5, 5, 1, 4, 4)]
    row = mu.table2_row(means_in("corrected", {"VCoT": corrected_rows}))
    assert (row["VCoT Action"], row["VCoT Coordinate"], row["VCoT Image"]) == pytest.approx((100, 12.5, 100))


def test_vcot_official_oracle_ratio_on_the_release_shape():
    # The release: 90 mazes of 3..8 steps. The oracle gets every action right, so corrected = 100 and
    # official = sum(n) / (8 * 90); the two differ by the factor 8 * 90 / sum(n).
    lengths = [3 + i % 6 for i in range(90)]
    rows = [_maze(n, n, 0, 0, n) for n in lengths]
    official = mu.table2_row(means_in("official", {"VCoT": rows}))["VCoT Action"]
    assert official == pytest.approx(100 * sum(lengths) / (8 * 90))
    corrected = mu.table2_row(means_in("corrected", {"VCoT": rows}))["VCoT Action"]
    assert corrected / official == pytest.approx(8 * 90 / sum(lengths))


def test_missing_generated_outputs_official_skips_corrected_scores_zero():
    # Evaluate_Generation.py averages results[category], which never receives a failed sample.
    official = mu.table2_row(means_in("official", {"FIR": [{"lpips": 0.2}, {"lpips": None}]}))
    corrected = mu.table2_row(means_in("corrected", {"FIR": [{"lpips": 0.2}, {"lpips": 1.0}]}))
    assert official["FIR"] == pytest.approx(80.0) and corrected["FIR"] == pytest.approx(40.0)


def test_vp_official_normalisation_unclipped_and_all_equal_rule():
    # Evaluate_Generation_Video.normalize_scores: all equal -> 100 each; else 100 * (1 - (x - 1) / 999),
    # unclipped. Oracle-like VP: FVD 0 for both samples (all equal -> 100); FID 0.5 and 2.0 ->
    # 100 * (1 + 0.5 / 999) = 100.05005 and 100 * (1 - 1 / 999) = 99.89990, mean 99.97497.
    rows = [{"fvd": 0.0, "fid": 0.5}, {"fvd": 0.0, "fid": 2.0}, {"fvd": None, "fid": None}]
    official = means_in("official", {"VP": rows})[mu.task_name("VP")]
    assert official["fvd"] == pytest.approx(100.0)
    assert official["fid"] == pytest.approx((100 * (1 + 0.5 / 999) + 100 * (1 - 1 / 999)) / 2)
    # one sample alone is "all equal" too: 100, not 100.05
    assert means_in("official", {"VP": rows[:1]})[mu.task_name("VP")]["fid"] == pytest.approx(100.0)
    corrected = means_in("corrected", {"VP": rows})[mu.task_name("VP")]
    assert corrected["fvd"] == pytest.approx(100 * (1 + 1 / 999))  # 100.1: above 100, unclipped


def test_official_task_names():
    assert mu.task_name("VCoT", "official") == "mme_unify_vcot_official"
    assert mu.task_name("TIE", "official") == "mme_unify_tie_official"
    assert mu.task_name("SIPU", "official") == "mme_unify_sipu"  # no released-script variant
    assert mu.task_name("VCoT") == "mme_unify_vcot"


def test_generation_scores_from_samples():
    rows = {
        "FIR": [{"lpips": 0.2}, {"lpips": 0.4}],
        "TIG": [{"clip_i": 0.7, "clip_t": 30.0}, {"clip_i": 0.5, "clip_t": 34.0}],
        "VP": [{"fvd": 1.0, "fid": 1000.0}],
        "CIVG": [{"fvd": 1.0, "fid": 1.0, "clipsim": 0.3}, {"fvd": 1.0, "fid": 1.0, "clipsim": float("nan")}],
    }
    row = mu.table2_row(means_of(rows))
    assert row["FIR"] == pytest.approx(70.0)
    assert row["TIG"] == pytest.approx((60.0 + 32.0) / 2)
    assert row["VP"] == pytest.approx(50.0)
    assert row["CIVG"] == pytest.approx((100 + 100 + 30) / 3)  # a NaN CLIPSIM is skipped, not zeroed
    assert row["Gen. Avg"] == pytest.approx((70 + 46 + 50 + (230 / 3)) / 6)
    assert row["TVG"] is None and row["TIE"] is None


def test_missing_everything_gives_empty_row():
    row = mu.table2_row({})
    assert row["MME-U"] is None and row["Und. Avg"] is None


def test_bootstrap_replicates_flow_through_the_same_functions():
    features = mu.task_features("SIPU", [{"acc": 1}, {"acc": 0}, {"acc": 1}, {"acc": 1}])
    counts = np.array([[1, 1, 1, 1], [0, 4, 0, 0], [4, 0, 0, 0]])  # resampling counts per replicate
    row = mu.table2_row({"mme_unify_sipu": feature_means(features, counts)})
    np.testing.assert_allclose(row["SIPU"], [75.0, 0.0, 100.0])
    np.testing.assert_allclose(row["MME-U"], np.array([75.0, 0.0, 100.0]) / 9)
    assert not math.isnan(row["MME-U"][0])
