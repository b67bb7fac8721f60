"""``manifest.json`` (issue 24 item 4): every leaderboard row's full recipe, pointed to by every table."""

from __future__ import annotations

import json

from leaderboard_runs import judged, limited, maze_rows, run, versioned, write_adapter_run

from lmms_eval_unify.integration.provenance import run_provenance
from lmms_eval_unify.reports.manifest import SCHEMA


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
