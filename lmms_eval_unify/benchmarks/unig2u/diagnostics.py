"""RA / AL diagnostics of UniG2U GtA runs (paper Appendix I; Table 7), opt-in because they call a judge.

For every GtA sample of a ``--log_samples`` run the judge scores, on 1-5:
- RA (``unig2u.ra``): does the generated image follow the generation prompt (original + generated images);
- AL (``unig2u.al``): is the final answer consistent with the generated image.
Per category the score is the mean over judged samples; overall is the sample-weighted mean over categories
(Table 7's rule). Unusable outputs (no generated image) and failed/invalid judgements are counted, not scored.

    python -m lmms_eval_unify.benchmarks.unig2u.diagnostics RUN_DIR [--out ra_al.json]

Judge endpoint: the judge layer's settings (``LMMS_EVAL_UNIFY_JUDGE_BASE_URL`` …, docs/judges.md). Original
images come from the task's data (``LMMS_EVAL_UNIFY_DATA_DIR`` or the Hub files named in the task YAML); generated
images from the run's own media folders only, the folders ``score``, ``gallery`` and ``export`` read
(``run.saved.run_media_roots``: ``unify_media`` beside the samples' folder or one level up, for a ``score`` folder
those of the run it re-scored, and ``$LMMS_EVAL_UNIFY_MEDIA_ROOTS``), also after the run folder was moved.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import datasets
from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS
from lmms_eval_unify.benchmarks.unig2u.task import concatenate, resolve_files
from lmms_eval_unify.env_vars import read
from lmms_eval_unify.generation.protocols import split_generate_then_answer_prompt
from lmms_eval_unify.judges import JudgeRequest, judge_many
from lmms_eval_unify.output.record import OutputFailure, parse_output
from lmms_eval_unify.reports.gallery import media_roots
from lmms_eval_unify.run.context import run_context
from lmms_eval_unify.run.paths import DATA_DIR_ENV
from lmms_eval_unify.run.saved import RESULTS_SUFFIX, SAMPLES_INFIX, run_media_roots
from lmms_eval_unify.writes import EXIT_REFUSED, WriteRefused, output_root, write_text

# Our categories -> the judge prompts' category additions (Appendix I.9).
JUDGE_CATEGORY = {
    "real_world_apps": "real_world",
    "geometry_reasoning": "mathematical",
    "physics_reasoning": "stem",
    "puzzles_games": "puzzles",
    "chart_table": "chart_table",
    "spatial_intelligence": "spatial",
    "perception_reasoning": "perception",
}
GTA_SUFFIX = "_gta"


@dataclass
class Item:
    """One GtA sample as the judges see it."""

    task: str
    category: str
    question: str
    generation_prompt: str
    answer: str
    original: list[Image.Image]
    generated: list[Image.Image]


@dataclass
class Diagnostics:
    """RA/AL scores per sample (``None`` = not scored) and the counts of what was not scored."""

    ra: dict[str, list[int | None]] = field(default_factory=dict)
    al: dict[str, list[int | None]] = field(default_factory=dict)
    unusable: dict[str, int] = field(default_factory=dict)

    def table(self) -> dict[str, dict[str, float | None]]:
        """``{category | "overall": {"RA": mean, "AL": mean, "n": judged samples}}``."""
        out: dict[str, dict[str, float | None]] = {}
        for category in JUDGE_CATEGORY:
            ra = [s for s in self.ra.get(category, []) if s is not None]
            al = [s for s in self.al.get(category, []) if s is not None]
            if ra or al:
                out[category] = {"RA": _mean(ra), "AL": _mean(al), "n_ra": len(ra), "n_al": len(al)}
        out["overall"] = {
            "RA": weighted_overall(out, "RA", "n_ra"),
            "AL": weighted_overall(out, "AL", "n_al"),
        }
        return out


def _mean(values: Sequence[int]) -> float | None:
    return sum(values) / len(values) if values else None


def weighted_overall(rows: dict[str, dict], key: str, count: str) -> float | None:
    """Sample-weighted mean of per-category means (weights: judged samples per category)."""
    pairs = [(row[key], row[count]) for row in rows.values() if row.get(key) is not None and row.get(count)]
    total = sum(n for _, n in pairs)
    return sum(value * n for value, n in pairs) / total if total else None


@cache
def _task_config(task: str) -> dict:
    from lmms_eval.utils import load_yaml_config

    from lmms_eval_unify.run.paths import tasks_path

    return load_yaml_config(str(tasks_path() / "unig2u" / f"{task}.yaml"))


@cache
def _docs(task: str) -> datasets.Dataset:
    config = _task_config(task)
    split = config["test_split"]
    paths = resolve_files(config["dataset_kwargs"]["data_files"][split], read(DATA_DIR_ENV))
    parts = [datasets.load_dataset("parquet", data_files={split: p}, split=split) for p in paths]
    dataset = parts[0] if len(parts) == 1 else concatenate(parts, [Path(p).stem for p in paths])
    return config["process_docs"](dataset) if config.get("process_docs") else dataset  # BabyVision: one type


def run_media(samples_file: Path) -> list[Path]:
    """The only folders the images of a samples file's records are read from: the run's media folders of the
    results file beside it (:func:`~lmms_eval_unify.run.saved.run_media_roots`)."""
    results_file = samples_file.with_name(samples_file.name.partition(SAMPLES_INFIX)[0] + RESULTS_SUFFIX)
    try:
        results = gate.read_json(results_file, "data_file", [results_file.parent])
    except gate.Refused:
        results = {}
    return run_media_roots(results_file, results if isinstance(results, dict) else {})


def item_from_sample(task: str, row: dict, media: Sequence[Path]) -> Item | str:
    """The judge inputs of one samples-file row, or why it cannot be judged; its generated images are read from
    the run's media folders ``media`` alone (the record's root, or its folder of the same name there)."""
    raw = row["filtered_resps"][0] if isinstance(row.get("filtered_resps"), list) else row.get("filtered_resps")
    parsed = parse_output(raw)
    if parsed.unsupported:
        return "unsupported"
    if parsed.failure:
        return parsed.failure.reason
    roots = [root for root in media_roots(parsed.record.root, media) if root.is_dir()]
    parsed.record.root = str(roots[0]) if roots else parsed.record.root  # outside them: refused as unsafe_path
    with run_context(media_base=str(media[0]), trusted_roots=[str(root) for root in media]):
        generated = parsed.load_images()
    if isinstance(generated, OutputFailure):
        return generated.reason
    if not generated:
        return "no_generated_image"
    config = _task_config(task)
    prompt = str(row.get("input", ""))
    question = split_generate_then_answer_prompt(prompt, config.get("generation_kwargs", {}))[1]
    gen_prompt = "\n".join(step.text for step in parsed.record.steps if step.image)
    if parsed.record.protocol == "generate_then_answer":
        gen_prompt = parsed.record.steps[0].text
    doc = _docs(task)[int(row["doc_id"])]
    original = config["doc_to_visual"](doc)
    subtask = task.removeprefix("unig2u_").removesuffix(GTA_SUFFIX)
    return Item(task, SUBTASKS[subtask].category, question, gen_prompt, parsed.text, original, generated)


def samples_files(run_dir: Path) -> dict[str, Path]:
    """Newest samples file of every UniG2U GtA task under ``run_dir``."""
    found: dict[str, Path] = {}
    for path in sorted(run_dir.rglob("*_samples_unig2u_*.jsonl")):
        task = path.stem.split("_samples_", 1)[1]
        if task.endswith(GTA_SUFFIX) and task.removeprefix("unig2u_").removesuffix(GTA_SUFFIX) in SUBTASKS:
            found[task] = path
    return found


def run(run_dir: str | Path, config: dict | None = None) -> Diagnostics:
    """Judge every GtA sample of a run (RA and AL)."""
    result = Diagnostics()
    items: list[Item] = []
    for task, path in samples_files(Path(run_dir)).items():
        media = run_media(path)
        for line in path.read_text(encoding="utf-8").splitlines():
            item = item_from_sample(task, json.loads(line), media)
            if isinstance(item, str):
                result.unusable[item] = result.unusable.get(item, 0) + 1
            else:
                items.append(item)
    requests = []
    for item in items:
        category = JUDGE_CATEGORY[item.category]
        images = {"original": item.original, "generated": item.generated}
        common = {"task": item.task, "question": item.question, "category": category}
        requests.append(JudgeRequest("unig2u.ra", {**common, "generation_prompt": item.generation_prompt}, images))
        requests.append(JudgeRequest("unig2u.al", {**common, "answer": item.answer}, images))
    verdicts = judge_many(requests, config=config, task="unig2u_ra_al", progress=False) if requests else []
    for index, item in enumerate(items):
        ra, al = verdicts[2 * index], verdicts[2 * index + 1]
        result.ra.setdefault(item.category, []).append(ra.get("reasoning_visual_score") if ra.valid else None)
        result.al.setdefault(item.category, []).append(al.get("answer_visual_score") if al.valid else None)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, help="write the table as JSON here")
    args = parser.parse_args(argv)
    diagnostics = run(args.run_dir)
    table = diagnostics.table()
    print("| category | RA | AL | n |\n|---|---:|---:|---:|")
    for category, row in table.items():
        cells = [f"{row[k]:.2f}" if row.get(k) is not None else "-" for k in ("RA", "AL")]
        print(f"| {category} | {cells[0]} | {cells[1]} | {row.get('n_ra', '')} |")
    if diagnostics.unusable:
        print(f"not judged: {diagnostics.unusable}")
    if args.out:
        text = json.dumps({"table": table, "not_judged": diagnostics.unusable}, indent=2)
        try:
            folder = output_root(args.out.parent)
            write_text(folder / args.out.name, text, folder)
        except WriteRefused as refused:
            print(f"error: {refused}", file=sys.stderr)
            return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
