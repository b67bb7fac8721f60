"""``manifest.json`` (issue 24 item 4): every leaderboard row's full recipe, pointed to by every table."""

from __future__ import annotations

import json

from leaderboard_runs import judged, limited, maze_rows, run, versioned, write_adapter_run

from lmms_eval_unify.reports.manifest import SCHEMA
from lmms_eval_unify.run.provenance import run_provenance


def test_every_row_names_its_runs_arguments_seeds_judges_items_and_versions(tmp_path):
    description = {"model": "echo_painter", "seed": 1, "decoding": {"temperature": 0.0}}
    first = write_adapter_run(tmp_path / "s1", "echo_painter", description, "seed=1", {"uni_mmmu_maze": maze_rows(4)})
    second = write_adapter_run(
        tmp_path / "s2",
        "echo_painter",
        {**description, "seed": 2},
        "seed=2",
        {"uni_mmmu_maze": maze_rows(2), "uni_mmmu_geometry": [judged("Qwen-72B")]},
    )
    versioned(first, "uni_mmmu_maze", "2.0")
    limited(second, "uni_mmmu_maze", 2, 4)
    results = json.loads(second.read_text())
    results["config"] |= {"random_seed": 7, "torch_seed": 8, "gen_kwargs": "temperature=0"}
    results["lmms_eval_unify"] = {"version": "0.1.0", "commit": "abc"}
    second.write_text(json.dumps(results))
    out = tmp_path / "board"
    assert run([tmp_path / "s1", tmp_path / "s2", "--benchmark", "uni_mmmu", "--no-plots", "-o", out]) == 0

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema"] == SCHEMA
    assert manifest["built"]["lmms_eval_unify"] == run_provenance()
    assert manifest["built"]["command"][:2] == ["lmms-eval-unify", "leaderboard"]
    rows = manifest["rows"]
    assert sorted(rows) == ["echo_painter (seed=1)", "echo_painter (seed=2)"]
    one, two = rows["echo_painter (seed=1)"], rows["echo_painter (seed=2)"]
    assert one["model"] == two["model"] == "echo_painter" and one["config_id"] != two["config_id"]
    assert one["configuration"] == description and two["configuration"]["seed"] == 2
    assert [r["results_file"] for r in one["runs"]] == [str(first)]
    assert one["tasks"]["uni_mmmu_maze"]["results_files"] == [str(first)]
    (run_two,) = two["runs"]
    assert run_two["model_args"] == "seed=2" and run_two["gen_kwargs"] == "temperature=0"
    assert run_two["seeds"] == {"random_seed": 7, "torch_seed": 8}
    assert run_two["lmms_eval_unify"] == {"version": "0.1.0", "commit": "abc"}
    assert one["tasks"]["uni_mmmu_maze"]["scorer_version"] == "2.0"
    maze = two["tasks"]["uni_mmmu_maze"]
    assert (maze["n"], maze["n_dataset"], maze["limit"], maze["offset"]) == (2, 4, 2.0, 0)
    assert maze["items"] and maze["items"] != one["tasks"]["uni_mmmu_maze"]["items"]
    assert two["tasks"]["uni_mmmu_geometry"]["judges"] == ["Qwen-72B (uni_mmmu_geometry_image v1)"]
    assert "manifest.json" in (out / "leaderboard.md").read_text()
    assert "manifest.json" in (out / "leaderboard.html").read_text()


def test_secrets_in_model_arguments_never_reach_the_board_and_two_keys_stay_two_rows(tmp_path, monkeypatch):
    """Runs of an lmms-eval model given ``api_key=…`` (and a nested argument string holding a token): no file the
    leaderboard writes holds either secret, and the two keys still make two configurations."""
    from leaderboard_runs import write_configured_run

    monkeypatch.setenv("LMMS_EVAL_UNIFY_CACHE", str(tmp_path / "cache"))
    secrets = ["sk-live-aaaa1111bbbb", "sk-live-cccc2222dddd"]
    for index, secret in enumerate(secrets):
        args = f'model_version=gpt-4o,api_key={secret},und_args="hf_token={secret}x"'
        write_configured_run(tmp_path / f"r{index}", "gpt4v", args, {"uni_mmmu_maze": maze_rows(3)})
    out = tmp_path / "board"
    assert run([tmp_path / "r0", tmp_path / "r1", "--benchmark", "uni_mmmu", "--no-plots", "-o", out]) == 0
    written = "".join(path.read_text(encoding="utf-8") for path in out.rglob("*") if path.is_file())
    assert not any(secret in written for secret in secrets) and "[REDACTED:" in written
    rows = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["rows"]
    assert len(rows) == 2 and len({row["config_id"] for row in rows.values()}) == 2


def test_a_sharded_row_lists_every_shard_and_lmms_eval_s_version_apart_from_ours(tmp_path):
    """Issue 33 item 6: a sharded row listed only its first shard, and ``lmms_eval_version`` held the commit of
    the checkout the run started in (lmms-eval records ``branch@commit`` there), not lmms-eval's version."""
    from leaderboard_runs import write_shards

    from lmms_eval_unify.run.provenance import installed_version

    write_shards(tmp_path / "runs", {"uni_mmmu_maze": [{**row, "doc_id": i} for i, row in enumerate(maze_rows(6))]},
                 [(0, 2), (2, 4), (4, 6)])  # fmt: skip
    shards = sorted((tmp_path / "runs").rglob("*_results.json"))
    for path in shards:
        results = json.loads(path.read_text())
        results |= {"lmms_eval_version": "main@0123abcd", "lmms_eval_unify": {"commit": "abc", "lmms_eval": "0.7.9"}}
        path.write_text(json.dumps(results))
    out = tmp_path / "board"
    assert run([tmp_path / "runs", "--benchmark", "uni_mmmu", "--no-plots", "-o", out]) == 0

    manifest = json.loads((out / "manifest.json").read_text())
    (row,) = manifest["rows"].values()
    assert [r["results_file"] for r in row["runs"]] == [str(p) for p in shards]
    assert row["tasks"]["uni_mmmu_maze"]["results_files"] == [str(p) for p in shards]
    assert {(r["lmms_eval_version"], r["git_checkout"], r["lmms_eval_unify"]["commit"]) for r in row["runs"]} == {
        ("0.7.9", "main@0123abcd", "abc")
    }
    assert manifest["built"]["lmms_eval"] == installed_version("lmms-eval") != ""
