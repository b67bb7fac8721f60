"""GapEval Table 2 parts (Succ./Und./Gen.) and the joint proportions handed to the Gap Score fit."""

from __future__ import annotations

import pytest
from scoring.paper_table_io import cell, read_table

from lmms_eval_unify.scoring import gapeval as ge
from lmms_eval_unify.scoring.samples import feature_means


def test_joint_features_pair_questions_by_doc_id():
    und = [{"doc_id": 0, "correct": 1}, {"doc_id": 1, "correct": 1}, {"doc_id": 2, "correct": 0}]
    gen = [{"doc_id": 2, "correct": 1}, {"doc_id": 0, "correct": 1}, {"doc_id": 1}]  # doc 1: no verdict
    means = feature_means(ge.joint_features(und, gen))
    assert means["und"] == pytest.approx(200 / 3)
    assert means["gen"] == pytest.approx(200 / 3)
    assert means["succ"] == pytest.approx(100 / 3)  # only doc 0 is right both ways


def test_joint_proportions_of_table2_cells():
    rows = read_table("gapeval_table2.csv")
    impossible = []
    for row in rows:
        for c in ge.CATEGORIES:
            parts = [cell(row[f"{c}_{p}"]) for p in ("succ", "und", "gen")]
            if None in parts:
                continue
            props = ge.joint_proportions(*parts)
            assert sum(props) == pytest.approx(1.0)
            if min(props) < 0:
                impossible.append((row["model"], c))
    # UniPic2 Reasoning prints Succ. 7.86 > Gen. 3.93 (paper_tables/README.md), so p01 < 0.
    assert impossible == [("UniPic2", "reasoning")]


def test_parts_row_and_ability():
    means = {"reasoning": {"succ": 10.0, "und": 40.0, "gen": 20.0}}
    row = ge.parts_row(means)
    assert row["reasoning Succ."] == 10.0 and row["world_knowledge Und."] is None
    assert ge.ability(row) == 30.0
