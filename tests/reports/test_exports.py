"""`lmms-eval-unify export`: real CLI runs of the baselines on generated data, exported, read back, and scored by
the released tools' formulas (written out here by hand) -- which must give our leaderboard's numbers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_runs import BIN, judged_cli_runs, offline_env, samples_of
from PIL import Image

from lmms_eval_unify.benchmarks.gapeval import paper as ge
from lmms_eval_unify.benchmarks.gapeval.offline.data import generate as generate_gapeval
from lmms_eval_unify.benchmarks.gapeval.reference_judge import verdict as gapeval_verdict
from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate as generate_mme_unify
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate as generate_uni_mmmu
from lmms_eval_unify.benchmarks.uni_mmmu.reference_judge import verdict as uni_mmmu_verdict
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate as generate_unig2u
from lmms_eval_unify.benchmarks.unig2u.reference_judge import verdict as unig2u_verdict
from lmms_eval_unify.cli import main as cli_main
from lmms_eval_unify.integration.task import DATA_DIR_ENV
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles.official import maze_image_scores, sliding_image_scores
from lmms_eval_unify.reports import boards as bd
from lmms_eval_unify.reports import exports as ex
from lmms_eval_unify.reports.results_io import load_results
from lmms_eval_unify.testing.synthetic import write_run

MODELS = {"unify_oracle": [], "unify_random": []}
NO_RESAMPLING = bd.Options(replicates=0)
TINY_CLIP = {"clip_choice": {"backbone": "tiny", "weights": "random"}, "clip_score": {"backbone": "tiny", "weights": "random"}}  # fmt: skip


def board_values(board: bd.Board) -> dict[str, dict]:
    return {row.label: row.values for row in board.rows}


def export_cli(runs: Path, benchmark: str, out: Path, data_dir: Path | None = None) -> str:
    """The export command's stdout + stderr; with ``data_dir`` given as ``--data-dir``."""
    extra = ["--data-dir", str(data_dir)] if data_dir else []
    done = subprocess.run(
        [
            str(BIN / "lmms-eval-unify"),
            "export",
            str(runs),
            "--benchmark",
            benchmark,
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != DATA_DIR_ENV},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def parquet_rows(data: Path, benchmark: str, subset: str) -> list[dict]:
    return pq.read_table(data / benchmark / subset / "test.parquet").to_pylist()


def run_media(run: Path, task: str) -> list[list[bytes]]:
    """Per sample (doc order), the bytes of every image the model wrote, read from the run folder itself."""
    images = []
    for row in sorted(samples_of(run, task), key=lambda r: r["doc_id"]):
        record = UnifiedOutput.from_dict(json.loads(row["filtered_resps"]))
        paths = [s.image for s in record.steps if s.image] or record.images
        images.append([(Path(record.root) / p).read_bytes() for p in paths])
    return images


# --- MME-Unify ------------------------------------------------------------------------------------

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
            return (
                output.get("output_choice") in {"A", "B", "C", "D"}
                and output["output_choice"] == item["answer"]
            )
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
    corrected = board_values(bd.mme_unify_boards(models, NO_RESAMPLING)[0])
    official = board_values(bd.mme_unify_boards(models, bd.Options(replicates=0, mme_variant="official"))[0])
    for model in MODELS:
        export = ex.read_mme_unify(root / "export" / model / "mme_unify")
        assert sorted(export) == sorted(MME_TASKS.split(","))
        assert released_understanding_acc(export["mme_unify_sipu"]) == pytest.approx(corrected[model]["SIPU"])
        for subtask in ("csq", "al", "sd"):
            acc = released_choice_acc(export[f"mme_unify_{subtask}"], subtask)
            assert acc == pytest.approx(corrected[model][f"{subtask.upper()} Text"]), (model, subtask)
        vcot = export["mme_unify_vcot_official"]
        assert released_vcot_action_acc(vcot) == pytest.approx(official[model]["VCoT Action"])
        assert all(i["category"] == "Visual CoT" for i in vcot)
    oracle = ex.read_mme_unify(root / "export" / "unify_oracle" / "mme_unify")
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
        plain = ex.read_mme_unify(root / "export" / model / "mme_unify")
        export = ex.read_mme_unify(root / "export_data" / model / "mme_unify")
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
        export = ex.read_mme_unify(root / "export" / model / "mme_unify")
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


# --- Uni-MMMU -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uni_mmmu(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_uni_mmmu")
    generate_uni_mmmu(root / "data", 4, seed=6)
    (root / "dreamsim").mkdir()
    write_tiny_dreamsim_checkpoint(root / "dreamsim")
    metrics = {
        "dreamsim": {"backbone": TINY_DREAMSIM_TYPE, "weights": str(root / "dreamsim"), "device": "cpu"}
    }
    env = offline_env(root / "data", **{METRICS_ENV: json.dumps(metrics)})
    tasks = ",".join(
        f"uni_mmmu_{t}"
        for t in ("jigsaw", "maze", "sliding", "geometry", "maze_official", "sliding_official")
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
    board = board_values(bd.uni_mmmu_boards(load_results([root / "runs"]), NO_RESAMPLING)[0])
    for model in MODELS:
        export = ex.read_uni_mmmu(root / "export" / model / "uni_mmmu")
        run = root / "runs" / model
        jigsaw = export["uni_mmmu_jigsaw"]["cases"]
        labels = [
            int(r["target"]) for r in sorted(samples_of(run, "uni_mmmu_jigsaw"), key=lambda r: r["doc_id"])
        ]
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
        export = ex.read_uni_mmmu(root / "export" / model / "uni_mmmu")
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
        export = ex.read_uni_mmmu(root / "export_data" / model / "uni_mmmu")
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
        assert (
            [i["id"] for i in jigsaw["summary"]["per_item"]]
            == [r["id"] for r in rows]
            == list(jigsaw["cases"])
        )
        assert [i["id"] for i in metadata["items"]] == [r["id"] for r in rows]
        for item, row in zip(metadata["items"], rows, strict=True):
            assert item["label"] == row["label"]
            assert Path(item["gt_completed_2x2_path"]).read_bytes() == row["gt_completed_image"]["bytes"]
            assert Path(item["gt_wrong_2x2_path"]).read_bytes() == row["gt_wrong_image"]["bytes"]


# --- GapEval --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_gapeval_export_is_the_fits_input_and_gives_the_leaderboard_numbers(tmp_path):
    generate_gapeval(tmp_path / "data", 3, seed=8)
    judged_cli_runs(tmp_path / "runs", "gapeval", gapeval_verdict, offline_env(tmp_path / "data"), MODELS)
    export_cli(tmp_path / "runs", "gapeval", tmp_path / "export")
    joint = ex.read_gapeval(tmp_path / "export" / "gapeval")
    order = json.loads((tmp_path / "export" / "gapeval" / "gapeval_joint_rows.json").read_text())["row_order"]
    assert order == list(ge.CATEGORIES) and sorted(joint) == sorted(MODELS)
    board = board_values(bd.gapeval_boards(bd.gapeval_scored(load_results([tmp_path / "runs"]), NO_RESAMPLING), {}, NO_RESAMPLING)[0][0])  # fmt: skip
    for model, rows in joint.items():
        assert len(rows) == 4
        for category, row in zip(order, rows, strict=True):
            # evaluate.py's checks: four non-negative shares summing to 1 within 5e-3
            assert len(row) == 4 and min(row) >= 0.0 and abs(sum(row) - 1.0) <= 5e-3
            p11, p10, p01, p00 = (x / sum(row) for x in row)
            assert 100 * (p11 + p10) == pytest.approx(board[model][f"{category} Und."])
            assert 100 * (p11 + p01) == pytest.approx(board[model][f"{category} Gen."])
            assert 100 * p11 == pytest.approx(board[model][f"{category} Succ."])
    assert joint["unify_oracle"] == [[1.0, 0.0, 0.0, 0.0]] * 4


# --- UniG2U ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_unig2u_summary_gives_the_leaderboard_subtask_scores(tmp_path):
    generate_unig2u(tmp_path / "data", 3, seed=9)
    tasks = "unig2u_chartqa,unig2u_geometry,unig2u_vsp_reason,unig2u_chartqa_gta"
    judged_cli_runs(tmp_path / "runs", tasks, unig2u_verdict, offline_env(tmp_path / "data"), MODELS)
    export_cli(tmp_path / "runs", "unig2u", tmp_path / "export")
    boards, _ = bd.unig2u_boards(load_results([tmp_path / "runs"]), {}, NO_RESAMPLING)
    rows = board_values(boards[1])
    for model in MODELS:
        summary = ex.read_unig2u(tmp_path / "export" / model / "unig2u")
        assert sorted(summary) == sorted(tasks.split(","))
        assert all(not k.startswith("alias") and "stderr" not in k for m in summary.values() for k in m)
        for subtask in ("chartqa", "geometry", "vsp_reason"):
            assert 100 * summary[f"unig2u_{subtask}"]["acc,none"] == pytest.approx(
                rows[f"{model} (direct)"][subtask]
            )
        assert 100 * summary["unig2u_chartqa_gta"]["acc,none"] == pytest.approx(
            rows[f"{model} (GtA)"]["chartqa"]
        )


# --- failures -------------------------------------------------------------------------------------


def output_json(root: Path, images: list[str], text: str = "Answer: A") -> str:
    return UnifiedOutput("answer_and_image", text=text, images=images, root=str(root)).to_json()


def test_failed_samples_are_written_as_failures_and_counted(tmp_path, capsys):
    media = tmp_path / "runs" / "m" / "unify_media" / "m-1"
    (media / "x").mkdir(parents=True)
    (media / "x" / "ok.png").write_bytes(_png())
    (media / "x" / "corrupt.png").write_bytes(b"not a png")
    good, missing, corrupt = (output_json(media, [f"x/{n}.png"]) for n in ("ok", "gone", "corrupt"))
    rows = [
        {"filtered_resps": good, "target": "A", "text_correct": 1, "image_correct": 1, "details": {"predicted": "A"}},
        {"filtered_resps": missing, "target": "A", "text_correct": 1, "image_correct": 0,
         "invalid_outputs": "missing_image", "details": {"predicted": "A"}},
        {"filtered_resps": corrupt, "target": "B", "text_correct": 0, "image_correct": 0,
         "invalid_outputs": "corrupt_image", "details": {"predicted": None}},
        {"filtered_resps": good, "target": "A", "text_correct": 0, "image_correct": 0,
         "invalid_outputs": "judge_failed", "details": {"predicted": "A"}},
    ]  # fmt: skip
    write_run(tmp_path / "runs", "m", {"mme_unify_csq": rows, "uni_mmmu_geometry": rows})
    benchmark_task = {"mme_unify": "mme_unify_csq", "uni_mmmu": "uni_mmmu_geometry"}
    for benchmark in ("mme_unify", "uni_mmmu"):
        assert (
            ex.main([str(tmp_path / "runs"), "--benchmark", benchmark, "--out", str(tmp_path / "out")]) == 0
        )
        printed = capsys.readouterr().out
        assert "3 failed samples" in printed and f"m/{benchmark_task[benchmark]} (judge): 1" in printed
    csq = ex.read_mme_unify(tmp_path / "out" / "m" / "mme_unify")["mme_unify_csq"]
    assert [sorted(i["output"]) for i in csq] == [
        ["output_choice", "output_image"], ["output_choice"], [], ["output_choice", "output_image"]
    ]  # fmt: skip
    assert released_choice_acc(csq, "csq") == pytest.approx(100 * 3 / 4)
    # a second export into the same folder is refused: stale `_done.ok` files would be read as this export's
    assert ex.main([str(tmp_path / "runs"), "--benchmark", "uni_mmmu", "--out", str(tmp_path / "out")]) == 2
    assert "is not empty" in capsys.readouterr().err
    cases = ex.read_uni_mmmu(tmp_path / "out" / "m" / "uni_mmmu")["uni_mmmu_geometry"]
    # a judge failure leaves the model's output complete: written as done, the failure recorded beside it
    assert [c["done"] for c in cases["cases"].values()] == [True, False, False, True]
    assert [len(c["images"]) for c in cases["cases"].values()] == [1, 0, 0, 1]
    assert [c["result"]["status"] for c in cases["cases"].values()] == ["ok", "error", "error", "ok"]
    assert cases["cases"]["case_00003"]["result"]["judge_failure"] == "judge_failed"
    assert "missing_image" in cases["cases"]["case_00001"]["result"]["errors"][0]
    assert cases["summary"]["count_error"] == 2 and cases["manifest"][2]["notes"].startswith("corrupt_image")


def test_gapeval_model_without_every_category_is_left_out_and_said(tmp_path, capsys):
    write_run(tmp_path / "runs", "m", {t: [{"correct": 1}] for t in ge.task_names("reasoning")})
    # through the top-level command, which hands `export` over to the exports module
    assert (
        cli_main(["export", str(tmp_path / "runs"), "--benchmark", "gapeval", "--out", str(tmp_path / "out")])
        == 1
    )
    assert "not every category has both directions" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gapeval" / "gapeval_joint.json").exists()


def _png() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_uni_mmmu_code_and_science_cases_are_named_and_referenced_as_released(tmp_path, capsys):
    generate_uni_mmmu(tmp_path / "data", 2, seed=3)
    media = tmp_path / "runs" / "m" / "unify_media" / "m-1"
    media.mkdir(parents=True)
    (media / "out.png").write_bytes(_png())
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
    export = ex.read_uni_mmmu(tmp_path / "out" / "m" / "uni_mmmu")
    code_rows = parquet_rows(tmp_path / "data", "uni_mmmu", "code")
    reference = tmp_path / "out" / "m" / "uni_mmmu" / "reference" / "uni_mmmu_code"
    # eval_ummmu.py globs `case_*_*` and reads png/svg relative to its dataset_dir
    assert list(export["uni_mmmu_code"]["cases"]) == [
        f"case_{k:05d}_{r['id']}" for k, r in enumerate(code_rows)
    ]
    for case, row in zip(export["uni_mmmu_code"]["cases"].values(), code_rows, strict=True):
        assert (reference / case["result"]["png"]).read_bytes() == row["gt_image"]["bytes"]
        assert (reference / case["result"]["svg"]).read_text() == row["svg"]
    assert list(export["uni_mmmu_science"]["cases"]) == ["case_01", "case_02"]
    assert list(export["uni_mmmu_jigsaw"]["cases"]) == ["case_00000", "case_00001"]
    # without --data-dir: today's text-only export, and a note saying what is missing
    assert ex.main([*arguments[:-1], str(tmp_path / "plain")]) == 0
    assert "no --data-dir" in capsys.readouterr().err
    assert list(ex.read_uni_mmmu(tmp_path / "plain" / "m" / "uni_mmmu")["uni_mmmu_code"]["cases"]) == [
        "case_00000",
        "case_00001",
    ]
