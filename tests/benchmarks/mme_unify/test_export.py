"""`lmms-eval-unify export --benchmark mme_unify`: real CLI runs of the baselines on generated data, exported,
read back, and scored by the released scripts' formulas (written out here by hand) -- which must give our
leaderboard's numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from cli_runs import BIN, offline_env
from export_runs import (
    MODELS,
    NO_RESAMPLING,
    board_values,
    export_cli,
    export_model_run,
    failed_sample_rows,
    parquet_rows,
    run_media,
    write_score_run,
)
from PIL import Image

from lmms_eval_unify.benchmarks.mme_unify import export as mme_export
from lmms_eval_unify.benchmarks.mme_unify import leaderboard as mme_leaderboard
from lmms_eval_unify.benchmarks.mme_unify.generation import keyframe_indices
from lmms_eval_unify.benchmarks.mme_unify.offline.data import generate as generate_mme_unify
from lmms_eval_unify.benchmarks.mme_unify.scoring import iee_explanation
from lmms_eval_unify.output.record import Step, UnifiedOutput
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


def bytes_of(paths: list[str], folder: Path) -> list[bytes]:
    """The files of reference paths, which name them relative to the model's export folder (the scripts' base)."""
    assert not any(Path(p).is_absolute() for p in paths)
    return [(folder / p).read_bytes() for p in paths]


@pytest.mark.slow
def test_mme_unify_export_with_data_dir_carries_the_docs_fields_and_reference_images(mme):
    root, _ = mme
    data = root / "data"
    for model in MODELS:
        plain = mme_export.read(root / "export" / model / "mme_unify")
        folder = root / "export_data" / model / "mme_unify"
        export = mme_export.read(folder)
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
                    assert bytes_of(item["image"], folder) == [c["bytes"] for c in doc["image"]]
                elif subtask == "vcot":
                    steps = [item["data"][f"Step_{k}"] for k in range(len(doc["step_images"]))]
                    assert bytes_of(steps, folder) == [c["bytes"] for c in doc["step_images"]]
                    assert item["data"]["Coordinate"] == [json.loads(c) for c in doc["coordinates"]]
                    assert item["data"]["Action"] == doc["actions"]
                elif subtask == "tig":
                    assert bytes_of([item["data"]["image"]], folder) == [doc["image"]["bytes"]]
                else:
                    references = [c["bytes"] for c in doc["inputs"] + doc["candidates"]]
                    keys = RELEASE_DATA_KEYS[subtask]
                    assert bytes_of([item["data"][k] for k in keys], folder) == references, task


@pytest.mark.slow
def test_a_real_score_folder_exported_alone_gives_its_runs_released_numbers(mme):
    """``lmms-eval-unify score RUN --out SCORED`` (the ``unify_replay`` model) then ``export SCORED`` on its own: the
    released scripts read what the run's own export gives them (every image was written as missing, exit 0: CSQ
    3/9, SD 5/9, TIG NaN in the released tools)."""
    root, _ = mme
    env = offline_env(root / "data", LMMS_EVAL_UNIFY_MME_UNIFY_METRICS=json.dumps(TINY_CLIP))
    run, scored = root / "runs" / "unify_random", root / "scored_random"
    command = [str(BIN / "lmms-eval-unify"), "score", str(run), "--out", str(scored)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 failed samples" in export_cli(scored, "mme_unify", root / "export_scored")
    (exported_folder,) = (root / "export_scored").glob("*/mme_unify")  # one model, named as the replay names it
    exported = mme_export.read(exported_folder)
    original = mme_export.read(root / "export" / "unify_random" / "mme_unify")
    assert sorted(exported) == sorted(original)
    for subtask in ("csq", "al", "sd"):
        task = f"mme_unify_{subtask}"
        assert released_choice_acc(exported[task], subtask) == released_choice_acc(original[task], subtask)
    for task, key in (("mme_unify_csq", "output_image"), ("mme_unify_sd", "difference_image"),
                      ("mme_unify_tig", "output_image")):  # fmt: skip
        assert [Path(i["output"][key]).read_bytes() for i in exported[task]] == [m[0] for m in run_media(run, task)]


@pytest.mark.slow
def test_mme_unify_export_copies_every_generated_image(mme):
    root, _ = mme
    for model in MODELS:
        export = mme_export.read(root / "export" / model / "mme_unify")
        run = root / "runs" / model
        for task, key in (("mme_unify_csq", "output_image"), ("mme_unify_sd", "difference_image")):
            exported = [Path(i["output"][key]).read_bytes() for i in export[task]]
            assert exported == [images[0] for images in run_media(run, task)]
        assert [Path(i["output"]["output_image"]).read_bytes() for i in export["mme_unify_tig"]] == [
            images[0] for images in run_media(run, "mme_unify_tig")
        ]
        for item, images in zip(
            export["mme_unify_vcot_official"], run_media(run, "mme_unify_vcot_official"), strict=True
        ):
            steps = [s["output_image"] for s in item["outputs"].values() if s["output_image"]]
            assert [Path(p).read_bytes() for p in steps] == images


def test_failed_samples_are_written_as_failures_and_counted(tmp_path, capsys):
    rows = failed_sample_rows(tmp_path / "runs")
    write_run(tmp_path / "runs", "m", {"mme_unify_csq": rows})
    assert ex.main([str(tmp_path / "runs"), "--benchmark", "mme_unify", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "3 failed samples" in printed and "m/mme_unify_csq (judge): 1" in printed
    csq = mme_export.read(tmp_path / "out" / "m" / "mme_unify")["mme_unify_csq"]
    # every item names its image, a failed one the way the released script meets it (see the tests below)
    assert [sorted(i["output"]) for i in csq] == [
        ["output_choice", "output_image"], ["output_choice", "output_image"], ["output_image"],
        ["output_choice", "output_image"],
    ]  # fmt: skip
    assert released_choice_acc(csq, "csq") == pytest.approx(100 * 3 / 4)


# --- the shapes the released scripts read, failures included (runs written directly, no CLI) ------------------


def picture(level: int, size: tuple[int, int] = (24, 16)) -> Image.Image:
    return Image.fromarray(np.full((size[1], size[0], 3), level, dtype=np.uint8))


class Outputs:
    """A model's media folder under a run folder and the records that name its files."""

    def __init__(self, runs: Path) -> None:
        self.root = runs / "m" / "unify_media" / "m-1"
        self.root.mkdir(parents=True, exist_ok=True)

    def file(self, name: str, kind: str = "image", level: int = 100) -> str:
        """``kind``: ``image`` (written), ``missing`` (named, not written), ``corrupt`` (not an image)."""
        if kind == "image":
            picture(level).save(self.root / name)
        elif kind == "corrupt":
            (self.root / name).write_bytes(b"not a PNG")
        return name

    def record(self, protocol: str = "answer_and_image", **fields) -> str:
        return UnifiedOutput(protocol, root=str(self.root), **fields).to_json()


def export_rows(tmp_path: Path, tasks: dict[str, list[dict]], data: Path | None = None) -> dict[str, list[dict]]:
    """Write the rows as model ``m``'s run (with the task configs the local data needs) and export it."""
    return mme_export.read(export_model_run(tmp_path, "mme_unify", tasks, data))


def opens(path: str) -> bool:
    """Whether PIL decodes the file, as the released scripts' ``Image.open(...).convert("RGB")`` does."""
    try:
        with Image.open(path) as image:
            image.convert("RGB")
        return True
    except (OSError, ValueError):
        return False


IMAGE_FAILURES = ("ok", "missing", "corrupt", "none", "two")
"""A sample's image: one readable file; a path the run does not hold; a file that is no image; none; two images."""


def failure_records(outputs: Outputs, protocol: str, text: str) -> list[str]:
    """One record per :data:`IMAGE_FAILURES` kind, then a model error."""
    images = {
        "ok": [outputs.file("ok.png")],
        "missing": [outputs.file("gone.png", "missing")],
        "corrupt": [outputs.file("bad.png", "corrupt")],
        "none": [],
        "two": [outputs.file("a.png"), outputs.file("b.png")],
    }
    records = [outputs.record(protocol, text=text, images=images[kind]) for kind in IMAGE_FAILURES]
    return [*records, outputs.record(protocol, error="CUDA out of memory")]


def assert_released_view(path: str, kind: str) -> None:
    """What a released script meets at ``path`` for an output image of ``kind``: a readable copy; a path that does
    not exist (their ``os.path.exists`` / open fails); a file that exists but no reader decodes; no path."""
    if kind == "ok":
        assert Path(path).is_file() and opens(path)
    elif kind == "missing":
        assert path and not Path(path).exists()
    elif kind == "corrupt":
        assert Path(path).is_file() and not opens(path)
    else:
        assert path == ""


@pytest.mark.parametrize("subtask", ["csq", "al", "sd", "iee"])
def test_unify_qa_failures_keep_their_keys_and_meet_the_released_rule(tmp_path, subtask):
    """The released scripts decide a failed image by its path (empty, not existing, undecodable: a different
    verdict per script, docs/fidelity/mme_unify.md); an IEE item without both keys is dropped entirely."""
    outputs = Outputs(tmp_path / "runs")
    text = "Explanation: the cat sat" if subtask == "iee" else "Answer: A"
    rows = [
        {"filtered_resps": raw, "target": "A", "details": {"predicted": "A"}}
        for raw in failure_records(outputs, "answer_and_image", text)
    ]
    rows[-1] = {**rows[-1], "invalid_outputs": "model_error", "details": {"failure": "CUDA out of memory"}}
    items = export_rows(tmp_path, {f"mme_unify_{subtask}_official": rows})[f"mme_unify_{subtask}_official"]
    image_key = "difference_image" if subtask == "sd" else "output_image"
    answer_key = {"iee": "output_explanation", "sd": "selected_answer"}.get(subtask, "output_choice")
    for item, kind in zip(items, IMAGE_FAILURES, strict=False):
        assert_released_view(item["output"][image_key], kind)
        assert item["output"][answer_key] == ("the cat sat" if subtask == "iee" else "A")
    error = items[-1]["output"]
    assert error[image_key] == "" and not error.get(answer_key)
    if subtask == "iee":
        assert set(error) == {"output_explanation", "output_image"}


@pytest.mark.parametrize("subtask", ["csq", "sd"])
def test_a_score_folder_exported_alone_gives_the_released_numbers_of_its_run(tmp_path, monkeypatch, subtask):
    """``score RUN`` writes ``RUN/scored/``, whose records name RUN's media. Exported on its own (no
    ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``) it gives the released scripts what the run's own export gives them: every
    output image readable (the export wrote them all as missing, exit 0: CSQ 3/9, SD 5/9 in the released tools)."""
    from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV

    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV)
    outputs = Outputs(tmp_path / "runs")
    texts = ["Answer: A", "Answer: B", "Answer: A"]
    records = [outputs.record(text=t, images=[outputs.file(f"{k}.png", level=40 * k)]) for k, t in enumerate(texts)]
    rows = [
        {"filtered_resps": raw, "target": "A", "details": {"predicted": t[-1]}}
        for raw, t in zip(records, texts, strict=True)
    ]
    task = f"mme_unify_{subtask}"
    rescored = write_run(tmp_path / "runs", "m", {task: rows})
    write_score_run(rescored, tmp_path / "runs" / "m" / "scored", {task: rows})
    exported = {}
    for name, folder in (("run", rescored), ("scored", tmp_path / "runs" / "m" / "scored")):
        assert ex.main([str(folder), "--benchmark", "mme_unify", "--out", str(tmp_path / name)]) == 0
        exported[name] = mme_export.read(tmp_path / name / "m" / "mme_unify")[task]
    image_key = "difference_image" if subtask == "sd" else "output_image"
    for item in exported["scored"]:
        assert_released_view(item["output"][image_key], "ok")
    images = [[Path(i["output"][image_key]).read_bytes() for i in exported[name]] for name in exported]
    assert images[0] == images[1] == [images[0] for images in run_media(tmp_path / "runs" / "m", task)]
    assert released_choice_acc(exported["scored"], subtask) == released_choice_acc(exported["run"], subtask)


def test_iee_exports_the_explanation_our_scorer_compares(tmp_path):
    """The released IEE script compares ``output_explanation`` with the options as it is: a leading
    ``Explanation:`` label would be compared too (the export kept it: 49/200 samples disagreed)."""
    outputs = Outputs(tmp_path / "runs")
    texts = ["Explanation: The dog.", "explanation:the dog", "  EXPLANATION :  A dog ", "The dog, explained.", ""]
    rows = [{"filtered_resps": outputs.record(text=t, images=[outputs.file("ok.png")])} for t in texts]
    items = export_rows(tmp_path, {"mme_unify_iee_official": rows})["mme_unify_iee_official"]
    exported = [i["output"]["output_explanation"] for i in items]
    assert exported == ["The dog.", "the dog", "A dog", "The dog, explained.", ""]
    assert exported == [iee_explanation(t) for t in texts]


@pytest.mark.parametrize("subtask", ["fir", "tie", "tig"])
def test_image_generation_items_name_output_image_and_text_prompt(tmp_path, subtask):
    """``Evaluate_Generation.py`` reads ``item["output"]["output_image"]`` and ``item["Text_Prompt"]`` and skips an
    item with ``error`` (the export wrote ``output`` as a bare path and no prompt: KeyError / TypeError)."""
    outputs = Outputs(tmp_path / "runs")
    rows = [{"filtered_resps": raw, "target": "a photo of a cat"} for raw in failure_records(outputs, "image_only", "")]
    items = export_rows(tmp_path, {f"mme_unify_{subtask}_official": rows})[f"mme_unify_{subtask}_official"]
    for item, kind in zip(items, IMAGE_FAILURES, strict=False):
        assert item["Text_Prompt"] == "a photo of a cat" and "error" not in item
        assert_released_view(item["output"]["output_image"], kind)
    assert items[-1]["error"] == "model_error" and items[-1]["output"] == {"output_image": ""}
    assert {i["category"] for i in items} == {mme_export.CATEGORIES[subtask]}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Two generated items of every subtask (TVG's second has no reference video, as in the release)."""
    folder = tmp_path_factory.mktemp("mme_data")
    generate_mme_unify(folder, 2, seed=3)
    return folder


def test_vcot_items_carry_what_evaluate_vsp_reads(tmp_path, data):
    """``Evaluate_VSP.py`` reads ``subcategory`` (the export had none: KeyError), ``data.Action``,
    ``data.Coordinate``, ``data.Step_<k>`` under its base path and per step ``output_action``,
    ``output_location`` and ``output_image``; a failed step image meets the script's rule (tested above)."""
    outputs = Outputs(tmp_path / "runs")
    steps = [
        Step("Action: Right\nLocation: [1, 2]", outputs.file("s0.png")),
        Step("I would go up", outputs.file("s1.png", "missing")),
        Step("Action: Finish", None),
    ]
    rows = [
        {"filtered_resps": outputs.record("visual_cot_steps", steps=steps)},
        {"filtered_resps": outputs.record("visual_cot_steps", steps=steps, error="timeout")},
    ]
    items = export_rows(tmp_path, {"mme_unify_vcot_official": rows}, data)["mme_unify_vcot_official"]
    docs = parquet_rows(data, "mme_unify", "vcot")
    folder = tmp_path / "out" / "m" / "mme_unify"
    for item, doc in zip(items, docs, strict=True):
        assert item["subcategory"] == doc["subcategory"] and item["data"]["Action"] == doc["actions"]
        assert item["data"]["Coordinate"] == [json.loads(c) for c in doc["coordinates"]]
        assert bytes_of([item["data"][f"Step_{k}"] for k in range(len(doc["step_images"]))], folder) == [
            c["bytes"] for c in doc["step_images"]
        ]
    first = items[0]["outputs"]
    assert first["output_step_0"]["output_action"] == "Right" and first["output_step_0"]["output_location"] == [1, 2]
    assert "output_action" not in first["output_step_1"] and "output_location" not in first["output_step_1"]
    assert_released_view(first["output_step_0"]["output_image"], "ok")
    assert_released_view(first["output_step_1"]["output_image"], "missing")
    assert first["output_step_2"] == {"output_action": "Finish", "output_image": "", "full_text": "Action: Finish"}
    assert items[1]["outputs"] == {}  # a model error: nothing of the record is scored


def read_mp4(path: str) -> tuple[int, list[np.ndarray]]:
    """The frame count and frames (RGB) of an mp4 as ``Evaluate_Generation_Video.py`` reads one (OpenCV)."""
    capture = cv2.VideoCapture(path)
    count, frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT)), []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return count, frames


@pytest.mark.parametrize("subtask", ["civg", "tvg", "vp"])
def test_video_outputs_are_written_as_mp4_with_the_key_frames_the_script_reads(tmp_path, data, subtask):
    """The video script reads ``output`` (an mp4; its ``extract_keyframes`` opens it with OpenCV) and ``output2``
    (the key frames); the export wrote neither. The mp4 holds every frame, losslessly; ``output2`` the key frames
    by the released rule (a video shorter than 16 frames keeps each frame once); a failed output is ``""``."""
    outputs = Outputs(tmp_path / "runs")
    rng = np.random.default_rng(0)
    long = [Image.fromarray(rng.integers(0, 255, (18, 22, 3), dtype=np.uint8)) for _ in range(20)]
    short = [picture(10 * i, (22, 18)) for i in range(6)]
    for k, frame in enumerate([*long, *short]):
        frame.save(outputs.root / f"f{k:02d}.png")
    names = [f"f{k:02d}.png" for k in range(26)]
    records = [
        outputs.record("video", video_frames=names[:20]),
        outputs.record("video", video_frames=names[20:]),
        outputs.record("video", video_frames=[*names[:3], outputs.file("gone.png", "missing")]),
        outputs.record("video", video_frames=[*names[:3], outputs.file("bad.png", "corrupt")]),
        outputs.record("video"),
        outputs.record("video", error="CUDA out of memory"),
    ]
    rows = [{"filtered_resps": raw, "target": "a cat walks"} for raw in records]
    items = export_rows(tmp_path, {f"mme_unify_{subtask}_official": rows}, data)[f"mme_unify_{subtask}_official"]
    for item, frames in zip(items, (long, short), strict=False):
        count, decoded = read_mp4(item["output"])
        assert count == len(frames) == len(decoded)
        assert all(np.array_equal(d, np.asarray(f)) for d, f in zip(decoded, frames, strict=True))
        keys = keyframe_indices(frames)
        assert [int(Path(p).stem.split("_")[1]) for p in item["output2"]] == keys
        assert [Image.open(p).tobytes() for p in item["output2"]] == [frames[k].tobytes() for k in keys]
        assert item["category"] == mme_export.CATEGORIES[subtask]
    assert len(items[1]["output2"]) == 6  # six frames, each once (the released key-frame rule)
    for item in items[2:]:
        assert item["output"] == "" and item["error"] and "output2" not in item
    folder = tmp_path / "out" / "m" / "mme_unify"
    doc = parquet_rows(data, "mme_unify", subtask)[0]
    assert items[0]["Text_Prompt"] == doc["Text_Prompt"] and items[2]["Text_Prompt"] == "a cat walks"  # no doc: target
    video_key = "image" if subtask == "tvg" else "video"  # the script reads TVG's reference video from data.image
    assert bytes_of([items[0]["data"][video_key]], folder) == [Path(doc["video"]).read_bytes()]
    if subtask != "tvg":
        assert bytes_of([items[0]["data"]["image"]], folder) == [doc["image"]["bytes"]]
    else:
        assert "image" not in items[1].get("data", {})  # no reference video: the script skips the item
