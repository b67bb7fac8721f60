"""What a run records about the software that made it (issue 24 item 4) and the data it read (issue 33 item 1)."""

from __future__ import annotations

import json

import pytest

from lmms_eval_unify.run.provenance import checkout_commit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_commit_is_read_from_a_loose_ref_a_packed_ref_or_a_detached_head(tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(COMMIT + "\n")
    assert checkout_commit(git) == COMMIT
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(
        f"# pack-refs with: peeled\n{'f' * 40} refs/heads/other\n{COMMIT} refs/heads/main\n"
    )
    assert checkout_commit(git) == COMMIT
    (git / "HEAD").write_text(COMMIT[::-1] + "\n")
    assert checkout_commit(git) == COMMIT[::-1]


def test_no_checkout_gives_no_commit(tmp_path):
    assert checkout_commit(tmp_path / ".git") == ""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_bytes(b"\xff\xfe")
    assert checkout_commit(tmp_path / ".git") == ""


def test_local_data_takes_the_record_nearest_above_it_and_unrecorded_files_are_unknown(tmp_path):
    from lmms_eval_unify.run.provenance import (
        DATA_SOURCE_FILE,
        generated_source,
        local_source,
        mark_local_data,
        prepared_source,
    )

    root = tmp_path / "data"
    files = [root / "b" / f"{name}.parquet" for name in ("maze", "sliding/test")]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(b"")
    why = f"no {DATA_SOURCE_FILE} in its folder or above it"
    assert local_source(files[:1], root) == {"kind": "unknown", "file": "b/maze.parquet", "why": why}
    assert mark_local_data([*files, root / "b" / "video.mp4"], generated_source(3, 5), root) == [
        root / "b" / DATA_SOURCE_FILE,
        root / "b" / "sliding" / DATA_SOURCE_FILE,
    ]
    generated = {"kind": "generated", "seed": 3, "n": 5, "by": None, "file": "b/maze.parquet"}
    assert local_source(files, root) | {"by": None} == generated
    (root / "b" / DATA_SOURCE_FILE).write_text(json.dumps(prepared_source(tmp_path / "release")))
    assert local_source(files[1:], root)["kind"] == "generated"  # the record in its own folder wins
    assert local_source(files, root)["kind"] == "generated"  # any generated file makes the whole source so
    assert local_source(files[:1], root)["release"] == str(tmp_path / "release")
    (root / "b" / DATA_SOURCE_FILE).write_text('{"kind": "hub"}')  # only the data commands write records
    assert local_source(files[:1], root)["kind"] == "unknown"


def test_a_configured_dataset_names_its_hub_repository():
    from lmms_eval_unify.run.provenance import configured_source

    hub = {"kind": "hub", "repo": "lmms-lab-eval/UniMMMU", "name": "maze", "revision": "v1"}
    assert configured_source("lmms-lab-eval/UniMMMU", "maze", {"revision": "v1"}) == hub
    files = {"train": [f"hf://datasets/kkv233/unig2u_dataset@abc/{name}" for name in ("vsp/a.parquet", "b.parquet")]}
    hub = {"kind": "hub", "repo": "kkv233/unig2u_dataset", "name": "", "revision": "abc"}
    assert configured_source("parquet", None, {"data_files": files}) == {**hub, "files": ["vsp/a.parquet", "b.parquet"]}
    assert configured_source("parquet", None, {"data_files": "/local/x.parquet"})["kind"] == "unknown"


def test_a_run_records_lmms_eval_s_version_and_the_data_each_task_read():
    from lmms_eval_unify.run.provenance import installed_version, record_data_source, run_provenance

    assert "data" not in run_provenance() and run_provenance()["lmms_eval"] == installed_version("lmms-eval") != ""
    record_data_source("t_recorded", {"kind": "generated", "seed": 1, "n": 2}, "f00d")
    assert run_provenance(["t_recorded", "t_other"])["data"] == {
        "t_recorded": {"kind": "generated", "seed": 1, "n": 2, "fingerprint": "f00d"}
    }


@pytest.mark.heavy  # lmms-eval's task config loader, the dataset loader
def test_a_task_on_generated_data_records_its_seed_n_and_fingerprint(tmp_path, monkeypatch):
    from lmms_eval.utils import load_yaml_config

    from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
    from lmms_eval_unify.integration.task import UnifyTask
    from lmms_eval_unify.run.paths import DATA_DIR_ENV, tasks_path
    from lmms_eval_unify.run.provenance import generated_source, mark_local_data, run_provenance

    root = tmp_path / "data"
    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    config = load_yaml_config(str(tasks_path() / "uni_mmmu" / "uni_mmmu_maze.yaml"))
    paths = generate(root, 2, seed=3)
    UnifyTask(config=config)
    unknown = run_provenance(["uni_mmmu_maze"])["data"]["uni_mmmu_maze"]
    assert unknown["kind"] == "unknown" and unknown["file"] == "uni_mmmu/maze/test.parquet"
    mark_local_data(paths, generated_source(3, 2), root / "uni_mmmu")
    UnifyTask(config=config)
    generated = run_provenance(["uni_mmmu_maze"])["data"]["uni_mmmu_maze"]
    assert (generated["kind"], generated["seed"], generated["n"]) == ("generated", 3, 2)
    assert len(generated["fingerprint"]) == 16
