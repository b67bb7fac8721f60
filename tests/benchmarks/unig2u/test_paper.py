"""UniG2U roll-ups re-derive Table 4 (categories, overall, Δ) and Tables 13/14 (subtask Δ)."""

from __future__ import annotations

import numpy as np
import pytest
from paper_table_io import cell, mismatches, read_table

from lmms_eval_unify.benchmarks.unig2u import paper as ug
from lmms_eval_unify.scoring.samples import feature_means

T4 = read_table("unig2u_table4_categories.csv")
T11 = read_table("unig2u_table11_subtasks.csv")
T13 = read_table("unig2u_table13_subtask_deltas.csv")
T4_COLUMNS = dict(
    zip(
        ug.CATEGORIES,
        ("real_world_apps", "geometry_reasoning", "physics_reasoning", "puzzles_games", "chart_table",
         "spatial_intel", "perception_reasoning"),
        strict=True,
    )
)  # fmt: skip


def categories_of(row):
    return {cat: cell(row[col]) for cat, col in T4_COLUMNS.items()}


def test_category_sizes_match_table2():
    assert list(ug.CATEGORY_SIZES.values()) == [200, 200, 200, 537, 100, 500, 1263]
    assert sum(ug.CATEGORY_SIZES.values()) == 3000


def test_table4_overall_is_sample_weighted():
    assert mismatches(T4, "model", lambda r: ug.unig2u_overall(categories_of(r)), "overall") == {}


def test_table4_overall_is_not_the_unweighted_mean():
    unweighted = mismatches(T4, "model", lambda r: sum(categories_of(r).values()) / 7, "overall")
    assert len(unweighted) >= 35


def test_table4_categories_from_table11_subtasks():
    # Tables 4 and 11/12 list the same 42 rows in the same order (three names are spelt differently).
    for t4_row, row in zip(T4, T11, strict=True):
        subtask = {s: cell(row[s]) for s in ug.SUBTASKS}
        for cat, value in ug.category_scores(subtask, ug.CATEGORY_SUBTASKS).items():
            assert value == pytest.approx(cell(t4_row[T4_COLUMNS[cat]]), abs=0.01), (row["model"], cat)


def test_table4_delta_is_gain_over_paired_base():
    overall = {r["model"]: {ug.OVERALL: cell(r["overall"])} for r in T4}
    rows = [r for r in T4 if r["baseline_block"]]
    bad = mismatches(
        rows,
        "model",
        lambda r: ug.g2u_gain(overall[r["model"]], overall[r["baseline_block"]])[ug.OVERALL],
        "delta_overall",
    )
    assert len(rows) == 37 and bad == {}


def test_table13_subtask_deltas_only_mio_gta_uses_another_reference():
    t11 = {r["model"]: {s: cell(r[s]) for s in ug.SUBTASKS} for r in T11}
    differing = set()
    for row in T13:
        if not row["baseline_block"] or row["is_base"] == "1":
            continue
        gain = ug.g2u_gain(t11[row["model"]], t11[row["baseline_block"]])
        differing |= {(row["model"], s) for s in ug.SUBTASKS if abs(gain[s] - cell(row[s])) > 0.01}
    assert {m for m, _ in differing} == {"mio(GtA)"} and len(differing) == 25
    # mio(GtA)'s printed deltas are Δ_GtA (GtA minus its own Direct run), not GtA minus the base VLM.
    as_delta_gta = ug.delta_gta(t11["mio(GtA)"], t11["mio(direct)"])
    mio = next(r for r in T13 if r["model"] == "mio(GtA)")
    assert all(as_delta_gta[s] == pytest.approx(cell(mio[s]), abs=0.01) for s in ug.SUBTASKS)


def test_delta_direct_and_gta_decompose_the_total_gain():
    rows = {r["model"]: {**categories_of(r), ug.OVERALL: cell(r["overall"])} for r in T4}
    base, direct, gta = rows["qwen2.5-vl-7b"], rows["OmniGen2(direct)"], rows["OmniGen2(GtA)"]
    d_direct, d_gta = ug.delta_direct(direct, base), ug.delta_gta(gta, direct)
    assert d_direct[ug.OVERALL] == pytest.approx(-2.46, abs=0.01)
    assert d_direct[ug.OVERALL] + d_gta[ug.OVERALL] == pytest.approx(-2.58, abs=0.01)


def test_best_of_gta_takes_the_maximum_per_dataset():
    one_shot = {"Chart & Table": 50.0, ug.OVERALL: 30.0, "Geometry Reasoning": None}
    agentic = {"Chart & Table": 40.0, ug.OVERALL: 35.0}
    best = ug.best_of_gta([one_shot, agentic])
    assert best == {"Chart & Table": 50.0, ug.OVERALL: 35.0, "Geometry Reasoning": None}
    assert ug.best_of_gta([one_shot]) == one_shot


def test_protocol_row_from_samples_weights_by_scored_samples():
    means = {}
    for subtask in ug.SUBTASKS:
        rows = [{"acc": 1.0}, {"acc": 0.0}] if subtask == "chartqa" else [{"acc": 1.0}]
        means[ug.task_name(subtask, "_gta")] = feature_means(ug.task_features(rows))
    sizes = {ug.task_name(s, "_gta"): (2 if s == "chartqa" else 1) for s in ug.SUBTASKS}
    row = ug.protocol_row(means, "_gta", sizes)
    assert row["Chart & Table"] == 50.0 and row["Physics Reasoning"] == 100.0 and row["chartqa"] == 50.0
    assert row[ug.OVERALL] == pytest.approx(100 * 30 / 31)
    assert ug.protocol_row(means, "")[ug.OVERALL] is None  # no Direct tasks in this run


def test_a_missing_subtask_blanks_its_category_and_the_overall():
    means = {ug.task_name(s): {"acc": np.float64(50.0)} for s in ug.SUBTASKS if s != "sliding"}
    row = ug.protocol_row(means, "")
    assert row["Puzzles & Games"] is None and row[ug.OVERALL] is None
    assert row["Chart & Table"] == 50.0
