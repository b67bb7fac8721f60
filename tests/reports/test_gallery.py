"""`lmms-eval-unify gallery`: the site's data and files (pure Python), the page in a real browser, a real run."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from lmms_eval_unify.output.record import Step, UnifiedOutput
from lmms_eval_unify.reports.gallery import THUMB_PX, main
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV
from lmms_eval_unify.testing.synthetic import write_run

TASK = "uni_mmmu_maze"
JUDGED = "unig2u_phyx"


def png(path: Path, colour: tuple[int, int, int], size: int = 600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), colour).save(path)


def record(root: Path, doc_id: int, n_steps: int, answer: str) -> str:
    """A UnifiedOutput with one image per step, written under ``root`` like our models do."""
    steps = []
    for i in range(n_steps):
        rel = f"{TASK}/{doc_id}/step_{i + 1:02d}.png"
        png(root / rel, (40 * i, 100, 20 * doc_id))
        steps.append(Step(f"move {i + 1}", rel))
    output = UnifiedOutput("image_sequence_then_answer", text=answer, images=[s.image for s in steps])
    output.steps = [*steps, Step("Done.")]
    output.root = str(root)
    return output.to_json()


def maze_rows(root: Path, correct: list[bool]) -> list[dict]:
    return [
        {
            "filtered_resps": record(root, i, 2, f"answer {i}"),
            "target": '["left", "up"]',
            "input": f"solve maze {i}",
            "text_sample_acc": float(ok),
            "text_step_acc": 1.0 if ok else 0.5,
            "invalid_outputs": "",
            "details": {"predicted_moves": ["left", "up"] if ok else ["down"]},
        }
        for i, ok in enumerate(correct)
    ]


@pytest.fixture
def runs(tmp_path) -> Path:
    """Two models on the same maze docs and one judged task; the run folder moved after it was written."""
    out = tmp_path / "out"
    media = out / "unify_media"
    good = maze_rows(media / "good", [True, True, True])
    bad = maze_rows(media / "bad", [False, True, False])
    bad[2].update(text_sample_acc=0.0, invalid_outputs="missing_image", details={"failure": "step_02 not found"})
    (media / "bad" / TASK / "2" / "step_02.png").unlink()
    judged = [
        {
            "filtered_resps": UnifiedOutput("direct", text="B").to_json(),
            "target": "B",
            "acc": 1.0,
            "invalid_outputs": "",
            "details": {"judge": {"status": "ok", "fields": {"answer_correct": True}, "reason": "same option"}},
        }
    ]
    write_run(out, "good", {TASK: good, JUDGED: judged})
    write_run(out, "bad", {TASK: bad})
    data = tmp_path / "data" / "uni_mmmu" / "maze"
    data.mkdir(parents=True)
    board = io.BytesIO()
    Image.new("RGB", (300, 300), (0, 0, 255)).save(board, format="PNG")
    table = {"id": ["a", "b", "c"], "initial_image": [{"bytes": board.getvalue(), "path": None}] * 3}
    pq.write_table(pa.table(table), data / "test.parquet")
    for model in ("good", "bad"):
        results = out / model / "20260101T000000_results.json"
        summary = json.loads(results.read_text())
        summary["configs"] = {
            TASK: {
                "metadata": {"benchmark": "uni_mmmu"},
                "dataset_name": "maze",
                "test_split": "test",
                "metric_list": [{"metric": m} for m in ("text_sample_acc", "text_step_acc", "invalid_outputs")],
            }
        }
        results.write_text(json.dumps(summary))
    moved = tmp_path / "moved"
    shutil.move(out, moved)
    return moved


def build(runs: Path, site: Path, *extra: str) -> dict:
    assert main([str(runs), "-o", str(site), "--data-dir", str(runs.parent / "data"), *extra]) == 0
    return json.loads((site / "gallery.json").read_text())


def image_links(data: dict) -> list[dict]:
    """Every image entry of the site's data (doc images, generated images, step images)."""
    found = [m for d in data["docs"] for c in d["doc_images"] for m in c["images"]]
    for d in data["docs"]:
        for a in d["answers"]:
            found += [m for m in a["output"]["images"] if m]
            found += [s["image"] for s in a["output"]["steps"] if s["image"]]
    return found


def test_site_data_and_links_resolve_to_files(runs, tmp_path):
    site = tmp_path / "site"
    data = build(runs, site)
    assert sorted(data["runs"]) == ["bad", "good"] and data["tasks"] == [TASK, JUDGED]
    maze = [d for d in data["docs"] if d["task"] == TASK]
    assert [d["doc_id"] for d in maze] == [0, 1, 2]
    assert maze[0]["prompt"] == "solve maze 0" and maze[0]["target"] == '["left", "up"]'
    answers = {a["run"]: a for a in maze[0]["answers"]}
    assert answers["good"]["correct"] is True and answers["bad"]["correct"] is False
    assert answers["good"]["headline"] == "text_sample_acc"
    assert answers["bad"]["scores"] == {"text_sample_acc": 0.0, "text_step_acc": 0.5}
    assert answers["bad"]["parsed"] == '["down"]'
    # 2 step images each; the moved run folder is found through <run>/unify_media/<model>.
    assert [s["text"] for s in answers["good"]["output"]["steps"]] == ["move 1", "move 2", "Done."]
    failed = {a["run"]: a for a in maze[2]["answers"]}["bad"]
    assert failed["failures"] == ["missing_image"] and failed["failure_detail"] == "step_02 not found"
    assert failed["output"]["steps"][1]["image"] == {"missing": f"{TASK}/2/step_02.png"}
    assert data["failure_reasons"] == ["missing_image"]
    judge = data["docs"][3]["answers"][0]["judges"]
    assert judge == [{"where": "details.judge", "status": "ok", "fields": {"answer_correct": True},
                      "reason": "same option", "answered_by": ""}]  # fmt: skip
    assert [c["column"] for c in maze[0]["doc_images"]] == ["initial_image"]
    links = [m for m in image_links(data) if "missing" not in m]
    assert len(links) == 3 * 2 * 2 - 1 + 3  # steps of both models minus the deleted one, one board per doc
    for media in links:
        assert (site / media["full"]).is_file() and (site / media["thumb"]).is_file()
        with Image.open(site / media["thumb"]) as thumb:
            assert max(thumb.size) <= THUMB_PX
    html = (site / "index.html").read_text()
    assert '<script src="data.js"></script>' in html
    assert (site / "data.js").read_text().startswith("window.GALLERY = {")


def test_no_doc_images_for_tasks_that_filter_their_docs(runs, tmp_path):
    """With ``process_docs`` a doc id is an index into the filtered docs, not a parquet row."""
    for results in runs.rglob("*_results.json"):
        summary = json.loads(results.read_text())
        summary["configs"][TASK]["process_docs"] = "<function visual_track_docs>"
        results.write_text(json.dumps(summary))
    data = build(runs, tmp_path / "site")
    assert [d["doc_images"] for d in data["docs"]] == [[]] * 4


def test_filters_only_wrong_task_and_limit(runs, tmp_path):
    wrong = build(runs, tmp_path / "w", "--only-wrong")
    assert [(d["task"], d["doc_id"]) for d in wrong["docs"]] == [(TASK, 0), (TASK, 2)]
    limited = build(runs, tmp_path / "l", "--task", "uni_mmmu_*", "--limit", "1")
    assert [(d["task"], d["doc_id"]) for d in limited["docs"]] == [(TASK, 0)]
    assert main([str(runs), "-o", str(tmp_path / "n"), "--task", "nothing"]) == 1
    assert main([str(tmp_path / "absent"), "-o", str(tmp_path / "n")]) == 2


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@pytest.fixture
def browser():
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    executable = chromium()
    if executable is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it)")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.mark.subprocess  # headless Chromium
def test_page_in_a_real_browser(runs, tmp_path, browser):
    """The page loads without script errors, filters and paging change what is shown, images decode."""
    rows = maze_rows(tmp_path / "many" / "unify_media" / "m", [i % 3 != 0 for i in range(45)])
    write_run(tmp_path / "many", "m", {TASK: rows})
    site = tmp_path / "site"
    build(runs, site)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((site / "index.html").as_uri())
    assert page.inner_text("#page-info") == "page 1 / 1 (4 docs)"
    assert page.locator(".doc").count() == 4 and page.locator(".answer").count() == 7
    page.select_option("#f-task", TASK)
    assert page.locator(".doc").count() == 3
    page.select_option("#f-correct", "wrong")
    assert [page.locator(".doc h2").nth(i).inner_text() for i in range(2)] == [f"{TASK} #0", f"{TASK} #2"]
    page.select_option("#f-correct", "")
    page.select_option("#f-failure", "missing_image")
    assert page.locator(".doc").count() == 1 and page.locator(".missing").count() == 2
    page.select_option("#f-task", "")
    page.select_option("#f-failure", "")
    images = page.locator("img.thumb")
    page.wait_for_load_state("load")
    assert images.count() == 14
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
        assert images.nth(i).evaluate("i => i.decode().then(() => i.naturalWidth)") > 0
    many = tmp_path / "many_site"
    build(tmp_path / "many", many)
    page.goto((many / "index.html").as_uri())
    assert page.inner_text("#page-info") == "page 1 / 3 (45 docs)"
    page.click("#next")
    page.click("#next")
    assert page.inner_text("#page-info") == "page 3 / 3 (45 docs)" and page.locator(".doc").count() == 5
    assert errors == []


@pytest.mark.slow
def test_gallery_of_a_real_lmms_eval_run(tmp_path):
    """unify_random on generated mazes through the real CLI: every visual-CoT step image is in the site."""
    from lmms_eval_unify.puzzles.dataset import write_puzzles

    write_puzzles(tmp_path / "data" / "uni_mmmu", 3, 3, seed=2)
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}  # fmt: skip
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    command = [sys.executable, "-m", "lmms_eval", "--model", "unify_random", "--tasks", TASK,
               "--output_path", str(tmp_path / "out"), "--log_samples"]  # fmt: skip
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
    data = build(tmp_path / "out", tmp_path / "site")
    samples = [json.loads(line) for p in (tmp_path / "out").rglob(f"*_samples_{TASK}.jsonl") for line in p.open()]
    assert len(data["docs"]) == len(samples) == 3
    for doc in data["docs"]:
        (answer,) = doc["answers"]
        steps = [s["image"] for s in answer["output"]["steps"] if s["image"]]
        assert len(steps) == answer["details"]["n_images"] and all("full" in s for s in steps)
        assert doc["prompt"].startswith("You are a precise maze solver")
        assert [c["column"] for c in doc["doc_images"]] == ["initial_image"]
        assert answer["headline"] == "text_sample_acc" and answer["correct"] is not None


def test_records_cannot_make_the_gallery_read_outside_the_run(tmp_path, monkeypatch):
    """A record whose root lies outside the run folder, is the run folder or its parent (``score`` reads neither),
    a symlink out of the media folder and a named pipe: none is copied into the site, nothing hangs, and the
    images show as missing."""
    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV)  # only the run's own media folders are trusted
    outside = tmp_path / "secret"
    png(outside / TASK / "0" / "step_01.png", (255, 0, 0))
    out = tmp_path / "out"
    media = out / "unify_media" / "m"
    (media / TASK / "1").mkdir(parents=True)
    (media / TASK / "1" / "step_01.png").symlink_to(outside / TASK / "0" / "step_01.png")
    (media / TASK / "2").mkdir(parents=True)
    os.mkfifo(media / TASK / "2" / "step_01.png")
    png(out / TASK / "3" / "step_01.png", (255, 0, 0))  # in the run folder, outside its media folders
    png(tmp_path / TASK / "4" / "step_01.png", (255, 0, 0))  # in the run folder's parent
    rows = []
    for doc_id, root in ((0, outside), (1, media), (2, media), (3, out), (4, tmp_path)):
        output = UnifiedOutput("image_only", images=[f"{TASK}/{doc_id}/step_01.png"], root=str(root))
        rows.append({"filtered_resps": output.to_json(), "target": "", "text_sample_acc": 0.0, "invalid_outputs": ""})
    write_run(out, "m", {TASK: rows})
    assert main([str(out), "-o", str(tmp_path / "site")]) == 0
    data = json.loads((tmp_path / "site" / "gallery.json").read_text())
    images = [a["output"]["images"][0] for d in data["docs"] for a in d["answers"]]
    assert len(images) == 5 and all("missing" in image for image in images)
    assert not list((tmp_path / "site" / "media" / "full").iterdir())


def test_two_configurations_of_one_model_are_two_runs_with_their_own_task_configs(tmp_path):
    """Loaded per configuration (not merged by the recorded name): each keeps its samples and its results
    file's task configs."""
    from leaderboard_runs import write_configured_run

    from lmms_eval_unify.reports.gallery import load_runs

    for seed, score in (("1", 1.0), ("2", 0.0)):
        path = write_configured_run(tmp_path / seed, "echo_painter", f"seed={seed}",
                                    {"uni_mmmu_maze": [{"text_step_acc": score}]})  # fmt: skip
        results = json.loads(path.read_text())
        results["configs"] = {"uni_mmmu_maze": {"metric_list": [{"metric": f"metric_of_seed_{seed}"}]}}
        path.write_text(json.dumps(results))
    runs = {run.label: run for run in load_runs([tmp_path / "1", tmp_path / "2"])}
    assert sorted(runs) == ["echo_painter (seed=1)", "echo_painter (seed=2)"]
    for seed, score in (("1", 1.0), ("2", 0.0)):
        run = runs[f"echo_painter (seed={seed})"]
        assert run.samples["uni_mmmu_maze"][0]["text_step_acc"] == score
        assert run.configs["uni_mmmu_maze"]["metric_list"] == [{"metric": f"metric_of_seed_{seed}"}]


def judge_record(model: str, status: str, **extra: object) -> dict:
    """A sample's judge record as the judge layer logs it (``JudgeResult.to_dict``)."""
    fields = {"answer_correct": 1} if status == "ok" else {}
    return {"template_id": "unig2u.answer_match", "template_version": 1, "model": model, "status": status,
            "fields": fields, "raw": None, "reason": None if status == "ok" else "connection refused",
            "cached": False, "replies": [], "template_digest": "abc", "valid": status == "ok", **extra}  # fmt: skip


def judged_rows(records: list[dict]) -> list[dict]:
    """One judged sample per judge record: a verdict scores 1, a failed judgement 0 with its failure."""
    return [
        {"filtered_resps": UnifiedOutput("direct", text="B").to_json(), "target": "B",
         "acc": 1.0 if record["status"] == "ok" else 0.0,
         "invalid_outputs": "" if record["status"] == "ok" else record["status"], "details": {"judge": record}}
        for record in records
    ]  # fmt: skip


def judged_gallery(tmp_path: Path, runs: dict[str, list[dict]]) -> dict:
    """The gallery data of one judged task run by each model (model -> its judge records)."""
    for model, records in runs.items():
        write_run(tmp_path / "out", model, {JUDGED: judged_rows(records)})
    assert main([str(tmp_path / "out"), "-o", str(tmp_path / "site")]) == 0
    return json.loads((tmp_path / "site" / "gallery.json").read_text())


def test_a_judge_failure_is_shown_as_a_failure_never_as_a_score_of_0(tmp_path):
    data = judged_gallery(tmp_path, {"m": [judge_record("gpt-4o", "ok"), judge_record("gpt-4o", "judge_failed")]})
    judged, failed = (doc["answers"][0] for doc in data["docs"])
    assert (judged["correct"], judged["judge_failure"], judged["failures"]) == (True, "", [])
    assert (failed["correct"], failed["judge_failure"], failed["failures"]) == (None, "judge_failed", ["judge_failed"])
    # each verdict names the judge it came from; a judgement with no reply names none
    assert [j["answered_by"] for j in judged["judges"] + failed["judges"]] == ["gpt-4o", None]


def test_the_gallery_names_the_judge_each_verdict_came_from(tmp_path):
    """A run whose reference judge was down (every judgement failed) is not said to be judged by it; a run it did
    judge is; a verdict from another model than the one asked names the one that answered."""
    from lmms_eval_unify.judges.config import REFERENCE_JUDGE_MODEL

    mismatch = {"model_mismatch": "asked gpt-4o, answered by gpt-4o-mini"}
    data = judged_gallery(tmp_path, {
        "dead": [judge_record(REFERENCE_JUDGE_MODEL, "judge_failed")] * 2,
        "served": [judge_record(REFERENCE_JUDGE_MODEL, "ok")],
        "other": [judge_record("gpt-4o", "ok", **mismatch)],
    })  # fmt: skip
    notices = " ".join(data["notices"])
    assert "served: judged by the offline reference judge" in notices and "dead:" not in notices
    answered = {a["run"]: [j["answered_by"] for j in a["judges"]] for d in data["docs"] for a in d["answers"]}
    assert answered == {"dead": [None], "served": [REFERENCE_JUDGE_MODEL], "other": ["gpt-4o-mini"]}


@pytest.mark.subprocess  # headless Chromium
def test_a_judge_failure_on_the_page_says_not_judged_and_names_no_judge(tmp_path, browser):
    judged_gallery(tmp_path, {"m": [judge_record("gpt-4o", "ok"), judge_record("gpt-4o", "judge_failed")]})
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "site" / "index.html").as_uri())
    judged, failed = page.locator(".answer").nth(0), page.locator(".answer").nth(1)
    assert judged.locator(".tag.ok").inner_text() == "acc = 1"
    assert judged.locator(".judge b").inner_text().startswith("judge gpt-4o")
    assert failed.locator(".tag.ok").count() == 0 and "acc = 0" not in failed.inner_text()
    assert failed.locator(".unjudged").inner_text() == "acc: not judged (judge_failed)"
    assert failed.locator(".judge b").inner_text().startswith("no verdict (judge_failed; asked gpt-4o)")
    assert "wrong" not in (failed.get_attribute("class") or "") and errors == []
