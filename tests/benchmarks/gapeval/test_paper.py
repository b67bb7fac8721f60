"""GapEval Table 2 parts (Succ./Und./Gen.) and the joint proportions handed to the Gap Score fit."""

from __future__ import annotations

import pytest
from paper_table_io import cell, read_table

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.reports.leaderboard import main as leaderboard
from lmms_eval_unify.scoring.samples import feature_means, n_samples
from lmms_eval_unify.testing.synthetic import write_run


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
    assert row["reasoning n11"] is None  # counts need the number of paired rows
    assert ge.ability(row) == 30.0


def test_parts_row_joint_counts_from_paired_rows():
    und = [{"doc_id": i, "correct": c} for i, c in enumerate([1, 1, 0, 0, 1])]
    gen = [{"doc_id": i, "correct": c} for i, c in enumerate([1, 0, 1, 0])]  # doc 4: no image answer
    features = ge.joint_features(und, gen)
    row = ge.parts_row({"reasoning": feature_means(features)}, {"reasoning": n_samples(features)})
    counts = [row[f"reasoning {cell}"] for cell in ge.JOINT_CELLS]
    assert counts == pytest.approx([1, 2, 1, 1])  # doc 4's missing image counts as wrong: text only
    assert row["world_knowledge n00"] is None


def test_joint_features_pair_on_question_id_and_repeat_when_present():
    # Same questions, different doc_ids (e.g. one direction ran with repeats): pairing follows question_id.
    und = [{"doc_id": i, "question_id": q, "repeat": r, "correct": c}
           for i, (q, r, c) in enumerate([("a", 0, 1), ("a", 1, 1), ("b", 0, 1), ("b", 1, 0)])]  # fmt: skip
    gen = [{"doc_id": 7, "question_id": "b", "repeat": 1, "correct": 1},
           {"doc_id": 8, "question_id": "a", "repeat": 0, "correct": 1},
           {"doc_id": 9, "question_id": "a", "repeat": 1, "correct": 0},
           {"doc_id": 0, "question_id": "b", "repeat": 0, "correct": 1}]  # fmt: skip
    means = feature_means(ge.joint_features(und, gen))
    assert means == pytest.approx({"und": 75.0, "gen": 75.0, "succ": 50.0})  # (a,0) and (b,0) both right
    assert ge.unpaired(und, gen) == ([], [])


def test_a_missing_side_counts_as_wrong_and_is_reported():
    und = [{"doc_id": 0, "correct": 1}, {"doc_id": 1, "correct": 1}, {"doc_id": 2, "correct": 1}]
    gen = [{"doc_id": 0, "correct": 1}, {"doc_id": 3, "correct": 1}]  # doc 1, 2: no image; doc 3: no text
    means = feature_means(ge.joint_features(und, gen))
    # Four questions: und right on 0-2 (doc 3 missing -> wrong), gen right on 0 and 3, both on 0 only.
    assert means == pytest.approx({"und": 75.0, "gen": 50.0, "succ": 25.0})
    assert ge.unpaired(und, gen) == ([1, 2], [3])
    lines = ge.describe_unpaired(und, gen, shown=1)
    assert lines == [
        "2 question(s) without a generation answer, counted as wrong there: 1, ... (1 more)",
        "1 question(s) without an understanding answer, counted as wrong there: 3",
    ]
    keyed = [{"doc_id": 0, "question_id": "q7", "repeat": 2, "correct": 1}]
    assert ge.describe_unpaired(keyed, []) == [
        "1 question(s) without a generation answer, counted as wrong there: q7#r2"
    ]


@pytest.mark.subprocess
def test_leaderboard_reports_unpaired_questions(tmp_path, capsys):
    tasks = {}
    for category in ge.CATEGORIES:
        und, gen = ge.task_names(category)
        tasks[und] = [{"question_id": f"q{i}", "correct": 1} for i in range(3)]
        tasks[gen] = [{"question_id": f"q{i}", "correct": 1} for i in range(3 if category != "reasoning" else 2)]
    write_run(tmp_path / "runs", "uni-model", tasks)
    args = [
        tmp_path / "runs",
        "--benchmark",
        "gapeval",
        "-o",
        tmp_path / "lb",
        "--no-plots",
        "--bootstrap",
        0,
    ]
    assert leaderboard([str(a) for a in args]) == 0
    captured = capsys.readouterr()
    line = "uni-model / reasoning: 1 question(s) without a generation answer, counted as wrong there: q2"
    assert f"warning: GapEval unpaired: {line}" in captured.err
    assert f"Unpaired: {line}" in captured.out and captured.out.count("Unpaired:") == 1
    board = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "Unpaired: " in board
    assert "| 66.67 | 100.00 | 66.67 |" in board  # reasoning Succ./Und./Gen.: q2's missing image is wrong


def test_one_direction_category_names_the_missing_direction():
    # Issue 17: a category run in one direction only is not scored; the warning must say which side is missing.
    import io

    from lmms_eval_unify.benchmarks.gapeval.leaderboard import warn_unpaired
    from lmms_eval_unify.reports.results_io import ModelResults

    und_task, gen_task = ge.task_names(ge.CATEGORIES[0])
    only_und = ModelResults("m", samples={und_task: [{"doc_id": 0, "correct": 1}]})
    only_gen = ModelResults("n", samples={gen_task: [{"doc_id": 0, "correct": 1}]})
    lines = warn_unpaired({"m": only_und, "n": only_gen}, warn=io.StringIO())
    assert lines == [
        f"m / {ge.CATEGORIES[0]}: no generation samples, category not scored",
        f"n / {ge.CATEGORIES[0]}: no understanding samples, category not scored",
    ]
