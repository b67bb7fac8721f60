"""Reading lmms-eval output folders into per-model samples."""

from __future__ import annotations

import io
import json

import pytest

from lmms_eval_unify.reports.results_io import find_results_files, load_results
from lmms_eval_unify.testing.synthetic import write_run


def test_reads_every_benchmark_task_of_every_model(tmp_path):
    write_run(tmp_path, "org/model-a", {"mme_unify_sipu": [{"acc": 1}, {"acc": 0}], "mmmu_val": [{"acc": 1}]})
    write_run(tmp_path / "other", "model-b", {"unig2u_chartqa": [{"acc": 1}]})
    models = load_results([tmp_path])
    assert set(models) == {"org/model-a", "model-b"}
    assert list(models["org/model-a"].samples) == ["mme_unify_sipu"]  # non-benchmark tasks are ignored
    assert [r["acc"] for r in models["org/model-a"].supported("mme_unify_sipu")] == [1, 0]


def test_rows_are_sorted_by_doc_id(tmp_path):
    path = write_run(tmp_path, "m", {"mme_unify_sipu": [{"acc": 1}, {"acc": 0}, {"acc": 1}]})
    samples = path.with_name(path.name.replace("_results.json", "_samples_mme_unify_sipu.jsonl"))
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(reversed(lines)) + "\n")
    rows = load_results([tmp_path])["m"].samples["mme_unify_sipu"]
    assert [r["doc_id"] for r in rows] == [0, 1, 2]


def test_unsupported_tasks_in_either_record_form(tmp_path):
    write_run(
        tmp_path,
        "m",
        {
            "mme_unify_tig": [{"unsupported": True}] * 3,
            "uni_mmmu_maze": [{"text_step_acc": None, "details": {"unsupported": "no image output"}}] * 2,
            "mme_unify_sipu": [{"acc": 1, "unsupported": False}],
        },
    )
    res = load_results([tmp_path])["m"]
    assert res.unsupported == {"mme_unify_tig", "uni_mmmu_maze"}
    assert res.supported("mme_unify_tig") is None and res.supported("mme_unify_sipu")


def test_task_without_samples_is_skipped_with_a_warning(tmp_path):
    path = write_run(tmp_path, "m", {"mme_unify_sipu": [{"acc": 1}]})
    data = json.loads(path.read_text())
    data["results"]["mme_unify_vpu"] = {"alias": "mme_unify_vpu", "acc,none": 0.5}
    data["results"]["mme_unify"] = {"alias": "mme_unify"}  # a group: never has a samples file
    data["group_subtasks"] = {"mme_unify": ["mme_unify_sipu", "mme_unify_vpu"], "mme_unify_sipu": []}
    path.write_text(json.dumps(data))
    warnings = io.StringIO()
    res = load_results([tmp_path], warn=warnings)["m"]
    assert set(res.samples) == {"mme_unify_sipu"}
    assert "mme_unify_vpu; rerun with --log_samples" in warnings.getvalue()
    assert "for mme_unify;" not in warnings.getvalue()


def test_later_runs_override_earlier_ones(tmp_path):
    write_run(tmp_path, "m", {"mme_unify_sipu": [{"acc": 0}]}, date_id="20260101T000000")
    write_run(tmp_path, "m", {"mme_unify_sipu": [{"acc": 1}]}, date_id="20260202T000000")
    assert load_results([tmp_path])["m"].samples["mme_unify_sipu"][0]["acc"] == 1


def test_model_label_falls_back_to_the_model_type(tmp_path):
    path = write_run(tmp_path, "x", {"mme_unify_sipu": [{"acc": 1}]})
    data = json.loads(path.read_text())
    data["model_name"] = ""
    data["config"]["model"] = "dummy"
    path.write_text(json.dumps(data))
    assert set(load_results([path])) == {"dummy"}


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        find_results_files([tmp_path / "nope"])
