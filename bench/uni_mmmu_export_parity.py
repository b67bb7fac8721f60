"""Uni-MMMU: our export fed unchanged to the released evaluator (maze, sliding, jigsaw), per case, against our
``official`` scores.

Usage: ``python bench/uni_mmmu_export_parity.py [--released PATH/eval_ummmu.py] [--n 6] [--models 3] [--seed 0]``
where PATH/eval_ummmu.py is the evaluator of Vchitect/Uni-MMMU (not part of this repo).

The bench generates the offline data, then runs of ``--models`` models whose outputs mix right and wrong answers
and failures: the true step boards, boards of other steps, fewer boards, a missing or unreadable board, no board,
answers with wrong or missing ``<ANSWER_JSON>`` blocks, jigsaw completions with the right, swapped or a single
image, model errors and samples the model cannot answer. Each output is scored by our tasks' ``process_results``
(``uni_mmmu_maze_official``, ``uni_mmmu_sliding_official``, ``uni_mmmu_jigsaw``) as lmms-eval calls them, the runs
are written as lmms-eval folders and exported with ``lmms-eval-unify export --data-dir``. Without ``--released``
that is all (our side, end to end: the export read back, our official numbers printed). With ``--released`` the
released ``MazeEvaluator``, ``SlidingPuzzleEvaluator`` and ``JigsawEvaluator`` evaluate each exported task folder
(their own ``evaluate``/``summarize``, reading the folders as the runner wrote them) and every case's result is
compared with ours. The jigsaw evaluator's DreamSim is our tiny random DreamSim (both sides embed with the same
weights: the check covers the rules, not the checkpoint). The judged tasks (geometry, science, code) need the
released Qwen judges and are not compared. Results: docs/fidelity/uni_mmmu.md.

The scorers read the generated outputs from the bench's scratch folder: the bench adds it to
``$LMMS_EVAL_UNIFY_MEDIA_ROOTS`` (a real run registers its media folder itself).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from _outputs import OutputFiles
from PIL import Image

from lmms_eval_unify import metrics
from lmms_eval_unify.benchmarks.uni_mmmu import export as uni_mmmu_export
from lmms_eval_unify.benchmarks.uni_mmmu.jigsaw import METRICS_ENV, score_jigsaw
from lmms_eval_unify.benchmarks.uni_mmmu.offline.data import generate
from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle
from lmms_eval_unify.generation.visuals import to_pil_images
from lmms_eval_unify.metrics.tiny import TINY_DREAMSIM_TYPE, write_tiny_dreamsim_checkpoint
from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import read_state, simulate
from lmms_eval_unify.puzzles.jigsaw import final_answer_text, jigsaw_completions
from lmms_eval_unify.reports.exports import export
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV
from lmms_eval_unify.testing.synthetic import write_run

TASKS = {"maze": "uni_mmmu_maze_official", "sliding": "uni_mmmu_sliding_official", "jigsaw": "uni_mmmu_jigsaw"}
# Our per-sample metric -> the released per-case record field.
RELEASED_FIELDS = {
    "maze": {"text_sample_acc": "text_exact", "text_step_acc": "text_frame_acc", "img_sample_acc": "img_exact",
             "img_step_acc": "img_frame_acc"},
    "sliding": {"text_sample_acc": "text_exact", "text_step_acc": "text_frame_acc", "img_sample_acc": "img_exact",
                "img_step_acc": "img_frame_acc"},
    "jigsaw": {"text_acc": "text_correct", "img_score": "image_score"},
}  # fmt: skip
# Our metric -> the released summary field of its mean.
RELEASED_SUMMARY = {
    "maze": {"text_sample_acc": "text_accuracy_exact", "text_step_acc": "text_accuracy_frame_macro",
             "img_sample_acc": "img_accuracy_exact", "img_step_acc": "img_accuracy_frame_macro"},
    "jigsaw": {"text_acc": "text_accuracy", "img_score": "image_score_penalized"},
}  # fmt: skip
RELEASED_SUMMARY["sliding"] = RELEASED_SUMMARY["maze"]


# --- outputs -------------------------------------------------------------------------------------------------


class Media(OutputFiles):
    """Where one model's outputs are written: files the record names by paths relative to ``root``."""

    def record(self, text: str, pictures: list[Image.Image], failure: str = "") -> str:
        """A record answering ``text`` with ``pictures``; ``failure``: one of them ``missing`` or ``corrupt``."""
        names = [self.file("picture", p) for p in pictures]
        if failure and names:
            names[len(names) // 2] = self.file(failure)
        return UnifiedOutput("visual_cot_steps", text=text, images=names, root=str(self.root)).to_json()


def special(media: Media, rng: random.Random) -> str | None:
    """A model error or an unsupported sample now and then."""
    kind = rng.choice(["error", "unsupported"] + ["" for _ in range(10)])
    if kind == "error":
        return UnifiedOutput("visual_cot_steps", error="CUDA out of memory").to_json()
    if kind == "unsupported":
        return UnifiedOutput("visual_cot_steps", unsupported="no image generation").to_json()
    return None


def moves_text(truth: list[str], rng: random.Random) -> str:
    kind = rng.choice(["right", "right", "wrong", "short", "none", "upper"])
    moves = {
        "right": truth,
        "wrong": [rng.choice(["up", "down", "left", "right"]) for _ in truth],
        "short": truth[:-1],
        "upper": [m.upper() for m in truth],
    }.get(kind)
    return "I cannot solve it." if moves is None else f"Plan...\n<ANSWER_JSON>{json.dumps(moves)}</ANSWER_JSON>"


def puzzle_output(puzzle: str, doc: dict, media: Media, rng: random.Random) -> str:
    raw = special(media, rng)
    if raw is not None:
        return raw
    truth = json.loads(doc["steps"] if puzzle == "maze" else doc["steps_words"])
    if puzzle == "maze":
        domain = DOMAINS["maze"]
        boards = [
            domain.render(s)
            for s in simulate(domain, read_state(domain, to_pil_images(doc["initial_image"])[0]), truth)
        ]
    else:
        boards = to_pil_images(list(doc["step_images"]))
    kind = rng.choice(["right", "right", "shifted", "fewer", "none", "missing", "corrupt"])
    pictures = {"shifted": boards[1:] + boards[:1], "fewer": boards[:-1], "none": []}.get(kind, boards)
    failure = kind if kind in ("missing", "corrupt") else ""
    return media.record(moves_text([str(m) for m in truth], rng), pictures, failure)


def jigsaw_output(doc: dict, media: Media, rng: random.Random) -> str:
    raw = special(media, rng)
    if raw is not None:
        return raw
    completions = list(jigsaw_completions(doc))
    kind = rng.choice(["right", "right", "swapped", "one", "three", "missing", "corrupt"])
    pictures = {"swapped": completions[::-1], "one": completions[:1], "three": [*completions, completions[0]]}.get(
        kind, completions
    )
    label = int(doc["label"])
    text = rng.choice(
        [
            final_answer_text(label),
            final_answer_text(1 - label),
            "no block",
            '<FINAL_ANSWER_JSON>{"choice": "0"}</FINAL_ANSWER_JSON>',
        ]
    )
    return media.record(text, pictures, kind if kind in ("missing", "corrupt") else "")


# --- runs, scored by our official scorers --------------------------------------------------------------------


def docs_of(data: Path, puzzle: str) -> list[dict]:
    return pq.read_table(data / "uni_mmmu" / puzzle / "test.parquet").to_pylist()


def score(puzzle: str, doc: dict, raw: str) -> dict:
    """The logged row of one output: our task's ``process_results``, as lmms-eval calls it."""
    if puzzle == "jigsaw":
        return score_jigsaw(doc, [raw])
    return score_puzzle(doc, [raw], domain=puzzle, variant="official")


def write_runs(data: Path, runs: Path, models: int, rng: random.Random) -> dict[str, dict[str, list[dict]]]:
    """``models`` lmms-eval run folders with the task configs the export's ``--data-dir`` needs; model -> task ->
    logged rows."""
    logged = {}
    for m in range(models):
        model = f"model{m}"
        tasks = {}
        for puzzle, task in TASKS.items():
            media = Media(runs / model / "unify_media" / model / task)
            rows = []
            for doc_id, doc in enumerate(docs_of(data, puzzle)):
                raw = jigsaw_output(doc, media, rng) if puzzle == "jigsaw" else puzzle_output(puzzle, doc, media, rng)
                target = doc.get("label", doc.get("steps", doc.get("steps_words")))
                rows.append({"doc_id": doc_id, "target": target, "filtered_resps": [raw], **score(puzzle, doc, raw)})
            tasks[task] = rows
        path = write_run(runs, model, tasks)
        results = json.loads(path.read_text())
        results["configs"] = {
            task: {"dataset_name": puzzle, "test_split": "test", "metadata": {"benchmark": "uni_mmmu"}}
            for puzzle, task in TASKS.items()
        }
        path.write_text(json.dumps(results))
        logged[model] = tasks
    return logged


def our_means(puzzle: str, rows: list[dict]) -> dict[str, float]:
    """Our official means: unsupported (None) samples left out, as the aggregation does."""
    values = {k: [r[k] for r in rows if r.get(k) is not None] for k in RELEASED_FIELDS[puzzle]}
    return {k: float(np.mean(v)) for k, v in values.items() if v}


# --- the released evaluator on the export --------------------------------------------------------------------


def load_released(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("released_eval_ummmu", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class _OnDevice:
    """The released DreamSim preprocessing's output stand-in: the image itself (``.to(device)`` a no-op)."""

    def __init__(self, image: Image.Image) -> None:
        self.image = image

    def to(self, device: Any) -> _OnDevice:
        return self


class StandInDreamSim:
    """``dreamsim(pretrained=True)``'s model stand-in: our DreamSim distance of the two images."""

    def __call__(self, a: _OnDevice, b: _OnDevice) -> Any:
        config = json.loads(os.environ[METRICS_ENV])["dreamsim"]
        return metrics.dreamsim_distance([a.image], [b.image], config)[0]


def released_evaluator(module: ModuleType, puzzle: str, folder: Path, scratch: Path) -> Any:
    """The released evaluator of ``puzzle`` on an exported task folder, configured as ``Configurations`` does."""
    settings = module.Configurations(model_name="bench")
    if puzzle == "jigsaw":
        config = {**settings.jigsaw, "dataset_dir": str(folder.parent / "reference" / folder.name),
                  "out_root": str(folder), "eval_dir": str(scratch)}  # fmt: skip
        evaluator = module.JigsawEvaluator.__new__(module.JigsawEvaluator)  # skips loading DreamSim's checkpoint
        evaluator.config, evaluator.utils, evaluator.results, evaluator.device = (
            config,
            module.UtilityHelpers(),
            [],
            "cpu",
        )
        evaluator.dreamsim_model, evaluator.dreamsim_pre = StandInDreamSim(), _OnDevice
        return evaluator
    config = {**(settings.maze if puzzle == "maze" else settings.sliding_puzzle), "run_root": str(folder),
              "out_root": str(scratch)}  # fmt: skip
    return (module.MazeEvaluator if puzzle == "maze" else module.SlidingPuzzleEvaluator)(config)


def released_check(module: ModuleType, puzzle: str, folder: Path, rows: list[dict], scratch: Path) -> tuple[int, dict]:
    """Per case, our official metrics against the released evaluator's record (our None = no record: the case
    is not evaluated), and the released summary."""
    evaluator = released_evaluator(module, puzzle, folder, scratch)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        evaluator.evaluate()
        evaluator.summarize()
    summary = json.loads((scratch / "summary.json").read_text())
    summary = summary.get("metrics", summary)
    cases = uni_mmmu_export.read(folder.parent)[folder.name]["cases"]
    by_case = {r.get("case_id", r.get("id")): r for r in evaluator.results}
    agree = 0
    for (case, _), row in zip(sorted(cases.items(), key=lambda c: c[1]["result"]["doc_id"]), rows, strict=True):
        record = by_case.get(case)
        if record is not None and puzzle == "jigsaw":
            record = {**record, "image_score": 1.0 - record["d_mean"]}
        ours = {k: row.get(k) for k in RELEASED_FIELDS[puzzle]}
        if record is None:
            agree += all(v is None for v in ours.values())
        else:
            agree += all(
                v is not None and math.isclose(v, float(record[f]), rel_tol=1e-6, abs_tol=1e-9)
                for k, f in RELEASED_FIELDS[puzzle].items()
                for v in [ours[k]]
            )
    return agree, {k: summary.get(f) for k, f in RELEASED_SUMMARY[puzzle].items()}


def rounded(values: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in values.items() if v is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--released", type=Path, help="the released eval_ummmu.py (omit: our side only)")
    parser.add_argument("--n", type=int, default=6, help="generated items per task")
    parser.add_argument("--models", type=int, default=3, help="runs, each with its own mix of outputs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    module = load_released(args.released) if args.released else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp).resolve()
        os.environ[EXTRA_MEDIA_ROOTS_ENV] = os.pathsep.join(
            filter(None, [str(work), os.environ.get(EXTRA_MEDIA_ROOTS_ENV)])
        )
        (work / "dreamsim").mkdir()
        write_tiny_dreamsim_checkpoint(work / "dreamsim")
        dreamsim = {"backbone": TINY_DREAMSIM_TYPE, "weights": str(work / "dreamsim"), "device": "cpu"}
        os.environ[METRICS_ENV] = json.dumps({"dreamsim": dreamsim})
        with contextlib.redirect_stderr(io.StringIO()):  # the parquet writer's progress bars
            generate(work / "data", args.n, seed=args.seed)
        logged = write_runs(work / "data", work / "runs", args.models, random.Random(args.seed))
        report = export([work / "runs"], "uni_mmmu", work / "export", work / "data")
        print(f"export: {len(report.files)} files, {sum(report.failures.values())} failed samples written as failures")
        for puzzle, task in TASKS.items():
            agree = total = 0
            for model, tasks in logged.items():
                folder = work / "export" / model / "uni_mmmu" / task
                rows = tasks[task]
                assert len(uni_mmmu_export.read(folder.parent)[task]["cases"]) == len(rows), task
                line = f"{puzzle} {model}: ours {rounded(our_means(puzzle, rows))}"
                if module is not None:
                    scratch = work / "scratch" / model / task
                    scratch.mkdir(parents=True)
                    agreeing, theirs = released_check(module, puzzle, folder, rows, scratch)
                    agree, total = agree + agreeing, total + len(rows)
                    line += f"; released {rounded(theirs)}; {agreeing}/{len(rows)} cases agree"
                print(line, flush=True)
            if module is not None:
                print(f"{puzzle}: {agree}/{total} cases agree (our official vs the released evaluator on our export)")


if __name__ == "__main__":
    main()
