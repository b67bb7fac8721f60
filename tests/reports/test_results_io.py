"""Reading lmms-eval output folders into per-model samples."""

from __future__ import annotations

import io
import json

import pytest
from leaderboard_runs import write_adapter_run, write_configured_run

from lmms_eval_unify.benchmarks import BENCHMARKS, part
from lmms_eval_unify.reports.results_io import (
    TASK_PREFIXES,
    find_results_files,
    load_results,
    parse_model_args,
)
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
    warnings = io.StringIO()
    assert load_results([tmp_path], warn=warnings)["m"].samples["mme_unify_sipu"][0]["acc"] == 1
    assert "mme_unify_sipu of m@" in warnings.getvalue() and "keeping the newer (20260202T000000" in warnings.getvalue()


def test_two_configurations_of_one_model_are_two_models_named_by_the_argument_that_differs(tmp_path):
    """Two runs of one adapter with different --model_args, each in its own --output_path."""
    write_configured_run(tmp_path / "a", "echo_painter", "seed=1,steps=20", {"uni_mmmu_maze": [{"text_step_acc": 1.0}]})
    write_configured_run(tmp_path / "b", "echo_painter", "seed=2,steps=20", {"uni_mmmu_maze": [{"text_step_acc": 0.0}]})
    models = load_results([tmp_path])
    assert sorted(models) == ["echo_painter (seed=1)", "echo_painter (seed=2)"]
    one, two = models["echo_painter (seed=1)"], models["echo_painter (seed=2)"]
    assert one.model == two.model == "echo_painter" and one.config_id != two.config_id
    assert one.configuration == {"model": "echo_painter", "seed": "1", "steps": "20"}
    assert [r["text_step_acc"] for r in two.samples["uni_mmmu_maze"]] == [0.0]


def test_one_configuration_across_run_folders_is_one_model(tmp_path):
    write_configured_run(tmp_path / "a", "echo_painter", "seed=1", {"uni_mmmu_maze": [{"text_step_acc": 1.0}]})
    write_configured_run(tmp_path / "b", "echo_painter", "seed=1", {"mme_unify_sipu": [{"acc": 1}]})
    (model,) = load_results([tmp_path]).values()
    assert set(model.samples) == {"uni_mmmu_maze", "mme_unify_sipu"} and len(model.sources) == 2


def test_our_adapters_are_told_apart_by_their_media_folder_and_named_from_describe(tmp_path):
    """The seed left at its default and given explicitly is one configuration (one describe()); seed=1 another."""
    default = {"model": "echo_painter", "seed": 0, "dtype": "float32"}
    maze = {"uni_mmmu_maze": [{"text_step_acc": 1.0}]}
    write_adapter_run(tmp_path / "a", "echo_painter", default, "", maze)
    write_adapter_run(tmp_path / "b", "echo_painter", default, "seed=0", {"mme_unify_sipu": [{"acc": 1}]})
    write_adapter_run(tmp_path / "c", "echo_painter", {**default, "seed": 1}, "seed=1", maze)
    models = load_results([tmp_path])
    assert sorted(models) == ["echo_painter (seed=0)", "echo_painter (seed=1)"]
    assert set(models["echo_painter (seed=0)"].samples) == {"uni_mmmu_maze", "mme_unify_sipu"}
    folder = next((tmp_path / "c" / "unify_media").iterdir()).name  # echo_painter-<hash of describe()>
    assert models["echo_painter (seed=1)"].config_id == "echo_painter@" + folder.rpartition("-")[2]


def test_model_args_are_split_like_lmms_eval_does():
    assert parse_model_args('pretrained=/w/m,extra={"a": 1, "b": 2},flag') == {
        "pretrained": "/w/m",
        "extra": '{"a": 1, "b": 2}',
        "flag": "",
    }
    assert parse_model_args({"seed": 3}) == {"seed": 3} and parse_model_args("") == {}


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


def test_the_tasks_read_are_those_of_the_registered_benchmarks_specs():
    assert TASK_PREFIXES == tuple(part(b, "spec").TASK_PREFIX for b in BENCHMARKS)
    assert TASK_PREFIXES == tuple(f"{b}_" for b in BENCHMARKS)


def test_sample_rows_read_back_every_row_as_written_in_a_fraction_of_the_memory():
    """Rows stored by column read back equal to the rows read (every JSON type, keys a row lacks, nested
    values), index like a list, hand over columns, and take a few bytes a value instead of ~0.7 KB a row."""
    import tracemalloc

    from lmms_eval_unify.reports.results_io import SampleRows

    rows = [
        {"doc_id": 0, "acc": 1.0, "flag": True, "reason": "", "details": {"discipline": "Physics"}},
        {"doc_id": 1, "acc": 0.5, "flag": False, "reason": "judge_failed", "big": 2**70},
        {"doc_id": 2, "acc": 0.0, "flag": None, "question_id": "q7", "score": 3},
    ]
    stored = SampleRows(rows)
    assert stored == rows and list(stored) == rows and len(stored) == 3
    assert stored[-1] == rows[-1] and stored[1:] == rows[1:] and stored[0]["details"] == {"discipline": "Physics"}
    with pytest.raises(IndexError):
        stored[3]
    assert list(stored.column("acc")) == [1.0, 0.5, 0.0] and stored.column("question_id") == [None, None, "q7"]
    assert stored.column("absent") == [None] * 3
    assert SampleRows(rows, drop=("details", "big")) == [{k: v for k, v in r.items() if k not in ("details", "big")}
                                                         for r in rows]  # fmt: skip
    assert SampleRows([{}, {}]) == [{}, {}] and SampleRows([]) == []

    lines = [json.dumps({"doc_id": i, "target": "", "acc": float(i % 2)}) for i in range(20_000)]
    tracemalloc.start()
    as_dicts = [json.loads(line) for line in lines]
    dicts_bytes = tracemalloc.get_traced_memory()[0]
    as_columns = SampleRows(as_dicts, drop=("target",))
    del as_dicts
    columns_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert columns_bytes / len(lines) < 40 < 300 < dicts_bytes / len(lines)
    assert as_columns[123] == {"doc_id": 123, "acc": 1.0}


def test_the_leaderboard_reads_configuration_and_provenance_before_dropping_the_request_log(tmp_path):
    """``drop=REQUEST_LOG_KEYS``: rows keep the scorers' keys only, yet the configuration is still told from
    the records' media folder (in ``filtered_resps``) and the items fingerprinted from prompts and targets."""
    from lmms_eval_unify.reports.results_io import REQUEST_LOG_KEYS

    rows = [{"acc": 1, "input": "question", "target": "A"}]
    write_adapter_run(tmp_path, "echo_painter", {"model": "echo_painter", "seed": 0}, "", {"mme_unify_sipu": rows})
    [full] = load_results([tmp_path]).values()
    [slim] = load_results([tmp_path], drop=REQUEST_LOG_KEYS).values()
    assert slim.config_id == full.config_id and slim.configuration == full.configuration == {"model": "echo_painter",
                                                                                             "seed": 0}  # fmt: skip
    assert slim.runs["mme_unify_sipu"].items == full.runs["mme_unify_sipu"].items
    assert "filtered_resps" in full.samples["mme_unify_sipu"][0]
    assert slim.samples["mme_unify_sipu"] == [{"doc_id": 0, "acc": 1}]
