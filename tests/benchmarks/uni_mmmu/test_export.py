"""`lmms-eval-unify export --benchmark uni_mmmu`: real CLI runs of the baselines on generated data (judged
against the local reference judge), exported, read back, and scored by the released evaluator's formulas
(written out here by hand) -- which must give our leaderboard's numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runs import judged_cli_runs, offline_env, samples_of
from export_runs import (
    MODELS,
    NO_RESAMPLING,
    board_values,
    export_cli,
    export_model_run,
    failed_sample_rows,
    output_json,
    parquet_rows,
    png,
    run_media,
)
from PIL import Image

from lmms_eval_unify.benchmarks.uni_mmmu import export as uni_mmmu_export
from lmms_eval_unify.benchmarks.uni_mmmu import leaderboard as uni_mmmu_leaderboard
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
from lmms_eval_unify.benchmarks.uni_mmmu.official import maze_image_scores, sliding_image_scores
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate as generate_uni_mmmu
from lmms_eval_unify.benchmarks.uni_mmmu.reference_judge import verdict as uni_mmmu_verdict
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.reports import exports as ex
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import write_run


@pytest.fixture(scope="module")
def uni_mmmu(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_uni_mmmu")
    generate_uni_mmmu(root / "data", 4, seed=6)
    (root / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(root / "dreamsim")
    metrics = {"dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(root / "dreamsim"), "device": "cpu"}}
    env = offline_env(root / "data", **{METRICS_ENV: json.dumps(metrics)})
    tasks = ",".join(
        f"uni_mmmu_{t}" for t in ("jigsaw", "maze", "sliding", "geometry", "maze_official", "sliding_official")
    )
    judged_cli_runs(root / "runs", tasks, uni_mmmu_verdict, env, MODELS)
    export_cli(root / "runs", "uni_mmmu", root / "export")
    export_cli(root / "runs", "uni_mmmu", root / "export_data", root / "data")
    return root


def released_jigsaw_text_acc(cases: dict, labels: list[int]) -> float:
    """JigsawEvaluator: the `choice` in the <FINAL_ANSWER_JSON> block must be 0 or 1 and equal the label."""
    correct = []
    for case, label in zip(cases.values(), labels, strict=True):
        match = re.search(r"<FINAL_ANSWER_JSON>\s*({.*?})\s*</FINAL_ANSWER_JSON>", case["text"], re.S | re.I)
        try:
            choice = json.loads(match.group(1)).get("choice") if match else None
        except json.JSONDecodeError:
            choice = None
        correct.append(choice in (0, 1) and choice == label)
    return 100.0 * float(np.mean(correct))


def released_move_text_acc(cases: dict, truths: list[list[str]]) -> tuple[float, float]:
    """Maze/sliding evaluators: the last <ANSWER_JSON> list, lowercased; (frame-macro, exact) accuracy."""
    frame, exact = [], []
    for case, truth in zip(cases.values(), truths, strict=True):
        blocks = re.findall(r"<ANSWER_JSON>\s*(\[.*?\])\s*</ANSWER_JSON>", case["text"], re.I | re.S)
        try:
            predicted = [str(m).strip().lower() for m in json.loads(blocks[-1])] if blocks else []
        except json.JSONDecodeError:
            predicted = []
        frame.append(sum(p == g for p, g in zip(predicted, truth, strict=False)) / len(truth))
        exact.append(predicted == truth)
    return 100.0 * float(np.mean(frame)), 100.0 * float(np.mean(exact))


@pytest.mark.slow
def test_uni_mmmu_export_gives_the_leaderboard_numbers(uni_mmmu):
    root = uni_mmmu
    board = board_values(uni_mmmu_leaderboard.boards(load_results([root / "runs"]), NO_RESAMPLING)[0])
    for model in MODELS:
        export = uni_mmmu_export.read(root / "export" / model / "uni_mmmu")
        run = root / "runs" / model
        jigsaw = export["uni_mmmu_jigsaw"]["cases"]
        labels = [int(r["target"]) for r in sorted(samples_of(run, "uni_mmmu_jigsaw"), key=lambda r: r["doc_id"])]
        assert released_jigsaw_text_acc(jigsaw, labels) == pytest.approx(board[model]["Jig. T"])
        for task, column in (("maze", "Maze T"), ("sliding", "Slid. T")):
            rows = sorted(samples_of(run, f"uni_mmmu_{task}"), key=lambda r: r["doc_id"])
            truths = [[m.lower() for m in json.loads(r["target"])] for r in rows]
            step, sample = released_move_text_acc(export[f"uni_mmmu_{task}"]["cases"], truths)
            assert step == pytest.approx(board[model][f"{column} step"]), (model, task)
            assert sample == pytest.approx(board[model][f"{column} sample"]), (model, task)


@pytest.mark.slow
def test_uni_mmmu_export_has_the_runner_layout_and_every_image(uni_mmmu):
    root = uni_mmmu
    for model in MODELS:
        export = uni_mmmu_export.read(root / "export" / model / "uni_mmmu")
        for task, data in export.items():
            cases = data["cases"]
            assert data["summary"]["count_total"] == len(cases) == len(data["manifest"]) == 4
            assert data["summary"]["count_error"] == 0 and all(c["done"] for c in cases.values())
            assert [Path(c["images"][0]).parent.name for c in cases.values()] == (
                ["cand_01"] * 4 if task.split("_")[2] in ("maze", "sliding") else [c for c in cases]
            )
            exported = [[p.read_bytes() for p in c["images"]] for c in cases.values()]
            assert exported == run_media(root / "runs" / model, task), (model, task)
        assert all(len(c["images"]) == 2 for c in export["uni_mmmu_jigsaw"]["cases"].values())


def released_image_acc(task: str, cases: dict) -> tuple[float, float]:
    """Maze/sliding (img step, img sample) accuracy from the exported files alone, located as eval_ummmu.py
    locates them: the initial image at result.json's ``step0``/``init_png``, the moves in the json file named
    after its folder, the sliding references = the folder's other PNGs; outputs = ``cand_01/*`` sorted."""
    step, sample = [], []
    for case in cases.values():
        initial_path = Path(case["result"]["step0" if task == "maze" else "init_png"])
        outputs = [Image.open(p).convert("RGB") for p in case["images"]]
        if task == "maze":
            match = re.match(r"^(maze_\d+x\d+?)_(\d{5})_steps$", initial_path.parent.name)
            truth = json.loads((initial_path.parent.parent / f"{match[1]}_steps_{match[2]}.json").read_text())
            moves = [m.lower() for m in truth["steps_long"]]
            exact, frame = maze_image_scores(Image.open(initial_path).convert("RGB"), moves, outputs)
        else:
            references = sorted(p for p in initial_path.parent.glob("*.png") if "0000" not in p.name)
            exact, frame = sliding_image_scores([Image.open(p).convert("RGB") for p in references], outputs)
        step.append(frame)
        sample.append(exact)
    return 100.0 * float(np.mean(step)), 100.0 * float(np.mean(sample))


@pytest.mark.slow
def test_uni_mmmu_export_with_data_dir_has_the_released_references(uni_mmmu):
    root = uni_mmmu
    for model in MODELS:
        export = uni_mmmu_export.read(root / "export_data" / model / "uni_mmmu")
        run = root / "runs" / model
        for task in ("maze", "sliding"):
            rows = parquet_rows(root / "data", "uni_mmmu", task)
            cases = export[f"uni_mmmu_{task}_official"]["cases"]
            key = "step0" if task == "maze" else "init_png"
            initials = [Path(c["result"][key]).read_bytes() for c in cases.values()]
            assert initials == [r["initial_image"]["bytes"] for r in rows]
            # the released image metric from the exported files = our official variant's per-sample scores
            official = sorted(samples_of(run, f"uni_mmmu_{task}_official"), key=lambda r: r["doc_id"])
            step, sample = released_image_acc(task, cases)
            assert step == pytest.approx(100.0 * np.mean([r["img_step_acc"] for r in official])), (
                model,
                task,
            )
            assert sample == pytest.approx(100.0 * np.mean([r["img_sample_acc"] for r in official]))
        # jigsaw: case folders named by the item ids, which the written metadata.json lists with the GT images
        jigsaw = export["uni_mmmu_jigsaw"]
        reference = root / "export_data" / model / "uni_mmmu" / "reference"
        metadata = json.loads((reference / "uni_mmmu_jigsaw" / "metadata.json").read_text())
        rows = parquet_rows(root / "data", "uni_mmmu", "jigsaw")
        assert [i["id"] for i in jigsaw["summary"]["per_item"]] == [r["id"] for r in rows] == list(jigsaw["cases"])
        assert [i["id"] for i in metadata["items"]] == [r["id"] for r in rows]
        for item, row in zip(metadata["items"], rows, strict=True):
            assert item["label"] == row["label"]
            assert Path(item["gt_completed_2x2_path"]).read_bytes() == row["gt_completed_image"]["bytes"]
            assert Path(item["gt_wrong_2x2_path"]).read_bytes() == row["gt_wrong_image"]["bytes"]


def test_failed_samples_are_written_as_failures_and_counted(tmp_path, capsys):
    rows = failed_sample_rows(tmp_path / "runs")
    write_run(tmp_path / "runs", "m", {"uni_mmmu_geometry": rows})
    assert ex.main([str(tmp_path / "runs"), "--benchmark", "uni_mmmu", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "3 failed samples" in printed and "m/uni_mmmu_geometry (judge): 1" in printed
    # a second export into the same folder is refused: stale `_done.ok` files would be read as this export's
    assert ex.main([str(tmp_path / "runs"), "--benchmark", "uni_mmmu", "--out", str(tmp_path / "out")]) == 2
    assert "is not empty" in capsys.readouterr().err
    cases = uni_mmmu_export.read(tmp_path / "out" / "m" / "uni_mmmu")["uni_mmmu_geometry"]
    # a judge failure leaves the model's output complete: written as done, the failure recorded beside it
    assert [c["done"] for c in cases["cases"].values()] == [True, False, False, True]
    assert [len(c["images"]) for c in cases["cases"].values()] == [1, 0, 0, 1]
    assert [c["result"]["status"] for c in cases["cases"].values()] == ["ok", "error", "error", "ok"]
    assert cases["cases"]["case_00003"]["result"]["judge_failure"] == "judge_failed"
    assert "missing_image" in cases["cases"]["case_00001"]["result"]["errors"][0]
    assert cases["summary"]["count_error"] == 2 and cases["manifest"][2]["notes"].startswith("corrupt_image")


def test_uni_mmmu_code_and_science_cases_are_named_and_referenced_as_released(tmp_path, capsys):
    generate_uni_mmmu(tmp_path / "data", 2, seed=3)
    media = tmp_path / "runs" / "m" / "unify_media" / "m-1"
    media.mkdir(parents=True)
    (media / "out.png").write_bytes(png())
    rows = [{"filtered_resps": output_json(media, ["out.png"]), "target": ""}] * 2
    tasks = ("uni_mmmu_code", "uni_mmmu_science", "uni_mmmu_jigsaw")
    results_file = write_run(tmp_path / "runs", "m", dict.fromkeys(tasks, rows))
    results = json.loads(results_file.read_text())
    subsets = {"uni_mmmu_code": "code", "uni_mmmu_science": "science", "uni_mmmu_jigsaw": "missing_subset"}
    results["configs"] = {
        task: {"dataset_name": subset, "test_split": "test", "metadata": {"benchmark": "uni_mmmu"}}
        for task, subset in subsets.items()
    }
    results_file.write_text(json.dumps(results))
    arguments = [str(tmp_path / "runs"), "--benchmark", "uni_mmmu", "--out", str(tmp_path / "out")]
    assert ex.main([*arguments, "--data-dir", str(tmp_path / "data")]) == 0
    assert "m/uni_mmmu_jigsaw: 2 docs not found" in capsys.readouterr().err
    export = uni_mmmu_export.read(tmp_path / "out" / "m" / "uni_mmmu")
    code_rows = parquet_rows(tmp_path / "data", "uni_mmmu", "code")
    reference = tmp_path / "out" / "m" / "uni_mmmu" / "reference" / "uni_mmmu_code"
    # eval_ummmu.py globs `case_*_*` and reads png/svg relative to its dataset_dir
    assert list(export["uni_mmmu_code"]["cases"]) == [f"case_{k:05d}_{r['id']}" for k, r in enumerate(code_rows)]
    for case, row in zip(export["uni_mmmu_code"]["cases"].values(), code_rows, strict=True):
        assert (reference / case["result"]["png"]).read_bytes() == row["gt_image"]["bytes"]
        assert (reference / case["result"]["svg"]).read_text() == row["svg"]
    assert list(export["uni_mmmu_science"]["cases"]) == ["case_01", "case_02"]
    assert list(export["uni_mmmu_jigsaw"]["cases"]) == ["case_00000", "case_00001"]
    # without --data-dir: today's text-only export, and a note saying what is missing
    assert ex.main([*arguments[:-1], str(tmp_path / "plain")]) == 0
    assert "no --data-dir" in capsys.readouterr().err
    assert list(uni_mmmu_export.read(tmp_path / "plain" / "m" / "uni_mmmu")["uni_mmmu_code"]["cases"]) == [
        "case_00000",
        "case_00001",
    ]


def test_failed_cases_are_written_so_the_released_evaluator_scores_them_as_we_do(tmp_path):
    """eval_ummmu.py scores what is in a case folder: a maze/sliding case without ``model_text.txt`` or a
    ``cand_*`` folder is left out of the means, a partial image list is matched image by image, a jigsaw item
    missing from ``metadata.json`` is not evaluated. Our scorers score a failed image 0 (jigsaw: the penalty)
    and a model error 0, and leave an unsupported sample out: the export writes each so (no images, an empty
    answer, nothing) and the evaluator's own rules give those numbers (bench/uni_mmmu_export_parity.py)."""
    generate_uni_mmmu(tmp_path / "data", 2, seed=3)
    media = tmp_path / "runs" / "m" / "unify_media" / "m-1"
    media.mkdir(parents=True)
    for name in ("a.png", "b.png", "c.png"):
        (media / name).write_bytes(png())
    (media / "bad.png").write_bytes(b"not a png")
    answer = '<ANSWER_JSON>["up"]</ANSWER_JSON>'
    records = {
        "ok": output_json(media, ["a.png", "b.png", "c.png"], answer),
        "missing": output_json(media, ["a.png", "gone.png", "c.png"], answer),
        "corrupt": output_json(media, ["a.png", "bad.png", "c.png"], answer),
        "error": UnifiedOutput("visual_cot_steps", text=answer, error="CUDA out of memory").to_json(),
        "unsupported": UnifiedOutput("visual_cot_steps", unsupported="no image generation").to_json(),
    }
    maze = [{"filtered_resps": raw, "target": '["up"]'} for raw in records.values()]
    jigsaw = [{"filtered_resps": records["ok"], "target": "0"}, {"filtered_resps": records["unsupported"]}]
    tasks = {"uni_mmmu_maze_official": maze, "uni_mmmu_jigsaw": jigsaw}
    folder = export_model_run(tmp_path, "uni_mmmu", tasks, tmp_path / "data")
    cases = [folder / "uni_mmmu_maze_official" / f"case_{k:05d}" for k in range(len(records))]
    assert [len(list(c.glob("cand_*/*"))) for c in cases] == [3, 0, 0, 0, 0]
    texts = [(c / "model_text.txt").read_text() if (c / "model_text.txt").exists() else None for c in cases]
    assert texts == [answer, answer, answer, "", None]
    metadata = json.loads((folder / "reference" / "uni_mmmu_jigsaw" / "metadata.json").read_text())["items"]
    assert [item["id"] for item in metadata] == [parquet_rows(tmp_path / "data", "uni_mmmu", "jigsaw")[0]["id"]]
