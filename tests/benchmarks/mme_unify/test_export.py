"""`lmms-eval-unify export --benchmark mme_unify`: real CLI runs of the baselines on generated data, exported,
read back, and scored by the released scripts' formulas (written out here by hand) -- which must give our
leaderboard's numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import offline_env
from export_runs import (
    MODELS,
    NO_RESAMPLING,
    board_values,
    export_cli,
    failed_sample_rows,
    parquet_rows,
    run_media,
)

from lmms_eval_unify.benchmarks.mme_unify import export as mme_export
from lmms_eval_unify.benchmarks.mme_unify import leaderboard as mme_leaderboard
from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate as generate_mme_unify
from lmms_eval_unify.reports import exports as ex
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import write_run

TINY_CLIP = {
    "clip_choice": {"backbone": "tiny", "weights": "random"},
    "clip_score": {"backbone": "tiny", "weights": "random"},
}
MME_TASKS = "mme_unify_sipu,mme_unify_csq,mme_unify_al,mme_unify_sd,mme_unify_vcot_official,mme_unify_tig"


@pytest.fixture(scope="module")
def mme(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_mme")
    generate_mme_unify(root / "data", 4, seed=2)
    env = offline_env(root / "data", LMMS_EVAL_UNIFY_MME_UNIFY_METRICS=json.dumps(TINY_CLIP))
    for model in MODELS:
        command = [sys.executable, "-m", "lmms_eval", "--model", model, "--tasks", MME_TASKS,
                   "--output_path", str(root / "runs" / model), "--log_samples"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    stdout = export_cli(root / "runs", "mme_unify", root / "export")
    export_cli(root / "runs", "mme_unify", root / "export_data", root / "data")
    return root, stdout


def released_understanding_acc(items: list[dict]) -> float:
    """Evaluate_Understanding.py: correct iff a non-empty `output` equals `answer`, over all items."""
    return 100.0 * sum(bool(i.get("output")) and i["output"] == i["answer"] for i in items) / len(items)


def released_choice_acc(items: list[dict], subtask: str) -> float:
    """Text accuracy of Evaluate_CS.py (`answer in output_choice`), Evaluate_Math_Geo.py (`output_choice` one of
    A-D and equal to `answer`) and Evaluate_SpotDiff.py (`selected_answer` stripped equals `answer`); an absent
    output counts as wrong (denominator = all items)."""

    def correct(item: dict) -> bool:
        output = item.get("output", {})
        if subtask == "csq":
            return "output_choice" in output and item["answer"] in output["output_choice"]
        if subtask == "al":
            return output.get("output_choice") in {"A", "B", "C", "D"} and output["output_choice"] == item["answer"]
        chosen = output.get("selected_answer")
        return bool(chosen and chosen.strip()) and chosen.strip() == item["answer"].strip()

    return 100.0 * sum(map(correct, items)) / len(items)


def released_vcot_action_acc(items: list[dict]) -> float:
    """Evaluate_VSP.py's action accuracy: output_step_i's action equals Action[i], summed over step slots, divided
    by (number of step slots = longest maze) x (number of mazes)."""
    slots = max(len(i["data"]["Action"]) for i in items)
    correct = sum(
        (i["outputs"].get(f"output_step_{k}") or {}).get("output_action") == action
        for i in items
        for k, action in enumerate(i["data"]["Action"])
    )
    return 100.0 * correct / (slots * len(items))


@pytest.mark.slow
def test_mme_unify_export_gives_the_leaderboard_numbers(mme):
    root, stdout = mme
    models = load_results([root / "runs"])
    corrected = board_values(mme_leaderboard.boards(models, NO_RESAMPLING)[0])
    official = board_values(mme_leaderboard.boards(models, NO_RESAMPLING, variant="official")[0])
    for model in MODELS:
        export = mme_export.read(root / "export" / model / "mme_unify")
        assert sorted(export) == sorted(MME_TASKS.split(","))
        assert released_understanding_acc(export["mme_unify_sipu"]) == pytest.approx(corrected[model]["SIPU"])
        for subtask in ("csq", "al", "sd"):
            acc = released_choice_acc(export[f"mme_unify_{subtask}"], subtask)
            assert acc == pytest.approx(corrected[model][f"{subtask.upper()} Text"]), (model, subtask)
        vcot = export["mme_unify_vcot_official"]
        assert released_vcot_action_acc(vcot) == pytest.approx(official[model]["VCoT Action"])
        assert all(i["category"] == "Visual CoT" for i in vcot)
    oracle = mme_export.read(root / "export" / "unify_oracle" / "mme_unify")
    assert released_understanding_acc(oracle["mme_unify_sipu"]) == 100.0
    assert "0 failed samples" in stdout and "image metrics need the docs" in stdout


# The release's `data` keys of the Unify tasks' images: the inputs, then the right candidate and the wrong ones
# (benchmark_facts.md §1.1).
RELEASE_DATA_KEYS = {
    "csq": ["image", "fake_image1", "fake_image2", "fake_image3"],
    "al": ["image", "image_Auxiliary_lines", *(f"image_Auxiliary_lines_negative{k}" for k in (1, 2, 3))],
    "sd": ["img_a", "img_b", "img_diff_a", *(f"img_diff_a_negative{k}" for k in (1, 2, 3))],
}


def bytes_of(paths: list[str]) -> list[bytes]:
    return [Path(p).read_bytes() for p in paths]


@pytest.mark.slow
def test_mme_unify_export_with_data_dir_carries_the_docs_fields_and_reference_images(mme):
    root, _ = mme
    data = root / "data"
    for model in MODELS:
        plain = mme_export.read(root / "export" / model / "mme_unify")
        export = mme_export.read(root / "export_data" / model / "mme_unify")
        for task, items in export.items():
            subtask = task.removeprefix("mme_unify_").removesuffix("_official")
            rows = parquet_rows(data, "mme_unify", subtask)
            for item, before in zip(items, plain[task], strict=True):
                doc = rows[item["doc_id"]]
                assert item["id"] == doc.get("question_id", doc.get("id")) and item["doc_id"] == before["id"]
                # the model's output is unchanged by the docs (its image paths aside: they name the export)
                output = json.dumps([item.get(k) for k in ("output", "outputs", "answer")])
                assert output.replace("/export_data/", "/export/") == json.dumps(
                    [before.get(k) for k in ("output", "outputs", "answer")]
                )
                for key in ("question", "choice", "source"):
                    assert item.get(key) == doc.get(key), (task, key)
                if subtask == "sipu":
                    assert bytes_of(item["image"]) == [c["bytes"] for c in doc["image"]]
                elif subtask == "vcot":
                    steps = [item["data"][f"Step_{k}"] for k in range(len(doc["step_images"]))]
                    assert bytes_of(steps) == [c["bytes"] for c in doc["step_images"]]
                    assert item["data"]["Coordinate"] == [json.loads(c) for c in doc["coordinates"]]
                    assert item["data"]["Action"] == doc["actions"]
                elif subtask == "tig":
                    assert bytes_of([item["data"]["image"]]) == [doc["image"]["bytes"]]
                else:
                    references = [c["bytes"] for c in doc["inputs"] + doc["candidates"]]
                    keys = RELEASE_DATA_KEYS[subtask]
                    assert bytes_of([item["data"][k] for k in keys]) == references, task


@pytest.mark.slow
def test_mme_unify_export_copies_every_generated_image(mme):
    root, _ = mme
    for model in MODELS:
        export = mme_export.read(root / "export" / model / "mme_unify")
        run = root / "runs" / model
        for task, key in (("mme_unify_csq", "output_image"), ("mme_unify_sd", "difference_image")):
            exported = [Path(i["output"][key]).read_bytes() for i in export[task]]
            assert exported == [images[0] for images in run_media(run, task)]
        assert [Path(i["output"]).read_bytes() for i in export["mme_unify_tig"]] == [
            images[0] for images in run_media(run, "mme_unify_tig")
        ]
        for item, images in zip(
            export["mme_unify_vcot_official"], run_media(run, "mme_unify_vcot_official"), strict=True
        ):
            steps = [s["output_image"] for s in item["outputs"].values() if "output_image" in s]
            assert [Path(p).read_bytes() for p in steps] == images


def test_failed_samples_are_written_as_failures_and_counted(tmp_path, capsys):
    rows = failed_sample_rows(tmp_path / "runs")
    write_run(tmp_path / "runs", "m", {"mme_unify_csq": rows})
    assert ex.main([str(tmp_path / "runs"), "--benchmark", "mme_unify", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "3 failed samples" in printed and "m/mme_unify_csq (judge): 1" in printed
    csq = mme_export.read(tmp_path / "out" / "m" / "mme_unify")["mme_unify_csq"]
    assert [sorted(i["output"]) for i in csq] == [
        ["output_choice", "output_image"], ["output_choice"], [], ["output_choice", "output_image"]
    ]  # fmt: skip
    assert released_choice_acc(csq, "csq") == pytest.approx(100 * 3 / 4)
