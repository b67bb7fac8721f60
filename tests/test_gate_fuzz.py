"""One corpus of hostile inputs driven through every reader of untrusted bytes (issue 25, item 6).

Readers: the record parser and image reader, scorers through their ``process_results``, ``score`` (saved runs and
samples files, and the scoring of the replayed records), ``gallery``, ``export``, ``data prepare``, task data
loading and its preflight schema check, the judge cache and judge reply parsing. For every one: no exception
escapes, each refused item has a reason, and no byte outside the allowed folders is read — checked by an audit
hook on ``open`` events (``sys.addaudithook``), which also refuses (and records) a blocking open of a FIFO or
device, so a reader taken off the gate fails here instead of hanging. A fake API key in the environment must
appear in no file the readers write. The gate's limits are set small, so the over-size inputs stay small.
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import sys
import threading
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from lmms_eval_unify import gate
from lmms_eval_unify.integration.data_rows import DATA_ERROR_KEY, checked_data_file, smoke_problem
from lmms_eval_unify.output.record import SCHEMA, parse_output
from lmms_eval_unify.run.context import EXTRA_MEDIA_ROOTS_ENV, run_context
from lmms_eval_unify.run.saved import read_saved_samples, saved_media_roots, saved_runs
from lmms_eval_unify.testing.synthetic import write_run

FAKE_KEY = "sk-fuzz-0123456789abcdefFAKEKEY"
LIMITS = {"text_chars": 1000, "record_chars": 50_000, "images_per_sample": 8, "image_pixels": 250_000,
          "samples_line_bytes": 250_000, "judge_reply_bytes": 20_000}  # fmt: skip
MAZE = "uni_mmmu_maze"
FORBIDDEN_NAME = "forbidden"
"""Every file a reader must never open has this in its name (and is red: no usable image of the corpus is)."""
RED = (255, 0, 0)


# ---- the audit hook: every open, checked as it happens -------------------------------------------------------
class OpenAudit:
    """Records opens of forbidden files and blocking opens of special files while ``active``; refuses both."""

    def __init__(self) -> None:
        self.active = False
        self.corpus = "/nonexistent"
        """Special files are checked inside this folder (the corpus) only."""
        self.violations: list[str] = []
        self._inside = threading.local()

    def __call__(self, event: str, args: tuple) -> None:
        if event != "open" or not self.active or getattr(self._inside, "busy", False) or isinstance(args[0], int):
            return
        self._inside.busy = True
        try:
            path = os.fsdecode(args[0])
            flags = args[2] if isinstance(args[2], int) else 0
            problem = self._problem(path, flags, self.corpus)
        except (OSError, ValueError, TypeError):
            problem = None
        finally:
            self._inside.busy = False
        if problem:
            self.violations.append(problem)
            raise PermissionError(f"fuzz audit: {problem}")

    @staticmethod
    def _problem(path: str, flags: int, corpus: str) -> str | None:
        real = os.path.realpath(path)
        if FORBIDDEN_NAME in real:
            return f"read outside the allowed roots: {path} -> {real}"
        if not real.startswith(corpus):
            return None
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None
        if (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)) and not flags & os.O_NONBLOCK:
            return f"blocking open of a special file: {path}"
        return None


AUDIT = OpenAudit()
sys.addaudithook(AUDIT)  # audit hooks cannot be removed: it does nothing while inactive


# ---- the corpus ----------------------------------------------------------------------------------------------
def png(path: Path, size: tuple[int, int] = (40, 40), colour: tuple[int, int, int] = (10, 120, 200)) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)
    return path.read_bytes()


def bomb(data: bytes) -> bytes:
    """A PNG whose header claims 100 000 x 100 000 pixels (valid CRC)."""
    header = struct.pack(">II", 100_000, 100_000) + data[24:29]
    return data[:16] + header + struct.pack(">I", zlib.crc32(b"IHDR" + header)) + data[33:]


def hostile_media(root: Path, outside: Path) -> dict[str, bool]:
    """Files under the media ``root``: name -> whether it is a usable image."""
    good = png(root / "good.png")
    png(root / "tiny.png", (1, 1))
    png(root / "thin.png", (300, 2))
    (root / "truncated.png").write_bytes(good[:-30])
    (root / "bomb.png").write_bytes(bomb(good))
    Image.new("RGB", (40, 40)).save(root / "full.jpg")
    (root / "truncated.jpg").write_bytes((root / "full.jpg").read_bytes()[:200])
    (root / "empty.png").write_bytes(b"")
    (root / "text.png").write_text("not an image")
    (root / "dir.png").mkdir()
    os.mkfifo(root / "fifo.png")
    os.mkfifo(root / "model.json")  # the configuration's description, read by every report
    (root / "out.png").symlink_to(outside / f"{FORBIDDEN_NAME}.png")
    (root / "outdir").symlink_to(outside)
    (root / "loop.png").symlink_to(root / "loop2.png")
    (root / "loop2.png").symlink_to(root / "loop.png")
    (root / os.fsdecode(b"\xff-undecodable.png")).write_bytes(good)
    names = {"good.png": True, "tiny.png": True, "thin.png": True, "full.jpg": True}
    names |= dict.fromkeys(["truncated.png", "bomb.png", "truncated.jpg", "empty.png", "text.png", "dir.png"], False)
    names |= dict.fromkeys(["fifo.png", "out.png", f"outdir/{FORBIDDEN_NAME}.png", "loop.png", "gone.png"], False)
    names |= {"../" * 12 + f"{outside}/{FORBIDDEN_NAME}.png".lstrip("/"): False, str(root / "good.png"): False}
    names |= {"a\x00b.png": False, "\ud800.png": False, "x" * 300 + ".png": False, "d/" * 2100 + "x.png": False}
    try:
        os.mknod(root / "zero.png", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless bytes
        names["zero.png"] = False
    except PermissionError:
        pass
    return names


def hostile_records(root: Path, outside: Path, run: Path) -> list[object]:
    """Model outputs: one per hostile image, plus wrong roots, wrong shapes, over-size text and image counts."""
    record = {"schema": SCHEMA, "protocol": "image_only", "root": str(root), "text": "answer"}
    outputs: list[object] = [json.dumps({**record, "images": [name]}) for name in hostile_media(root, outside)]
    png(run / f"{FORBIDDEN_NAME}_in_run.png", colour=RED)
    png(run.parent / f"{FORBIDDEN_NAME}_in_parent.png", colour=RED)
    outputs += [
        json.dumps({**record, "root": str(outside), "images": [f"{FORBIDDEN_NAME}.png"]}),
        json.dumps({**record, "root": str(run), "images": [f"{FORBIDDEN_NAME}_in_run.png"]}),
        json.dumps({**record, "root": str(run.parent), "images": [f"{FORBIDDEN_NAME}_in_parent.png"]}),
        json.dumps({**record, "root": "", "images": [str(outside / f"{FORBIDDEN_NAME}.png")]}),
        json.dumps({"text": "upstream form", "images": [str(outside / f"{FORBIDDEN_NAME}.png")]}),
        json.dumps({**record, "images": ["good.png"] * (LIMITS["images_per_sample"] + 1)}),
        json.dumps({**record, "steps": [{"text": "s", "image": "good.png"}] * (LIMITS["images_per_sample"] + 1)}),
        json.dumps({**record, "text": "x" * (LIMITS["text_chars"] + 1), "images": ["good.png"]}),
        json.dumps({**record, "text": "y" * LIMITS["record_chars"]}),
        "z" * (LIMITS["text_chars"] + 1),  # plain text of a text-only model
        json.dumps({**record, "images": 5}),
        json.dumps({**record, "steps": "step"}),
        json.dumps({**record, "steps": [1, ["two"], {"text": 3}]}),
        json.dumps({**record, "text": {"nested": "object"}}),
        json.dumps({**record, "timings": {"t": float("nan")}}),
        '{"schema": "' + SCHEMA + '", "text": ' + "[" * 50_000 + "]" * 50_000 + "}",
        json.dumps({**record, "text": "lone \ud800 surrogate \x00 nul"}, ensure_ascii=False),
        '{"schema": "' + SCHEMA + '", "images": ["good.png"',  # cut mid-record
        json.dumps({**record, "error": "model failed"}),
        {"not": "a string"},
        None,
    ]
    return outputs


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv(gate.LIMITS_ENV, json.dumps(LIMITS))
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_API_KEY", FAKE_KEY)
    monkeypatch.delenv(EXTRA_MEDIA_ROOTS_ENV, raising=False)  # only the readers' own roots are trusted
    outside = tmp_path / "outside"
    png(outside / f"{FORBIDDEN_NAME}.png", colour=RED)
    run = tmp_path / "base" / "run"  # an lmms-eval --output_path
    root = run / "unify_media" / "m-0123456789"  # a model configuration's media folder
    root.mkdir(parents=True)
    return tmp_path, outside, run, root, hostile_records(root, outside, run)


def check(failures: list[str], name: str, call, *args, **kwargs):
    """``call(*args, **kwargs)``, recording any exception that escapes as a failure of reader ``name``."""
    try:
        return call(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
        failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
        return None


# ---- readers -------------------------------------------------------------------------------------------------
def parse_and_load(outputs: list[object], root: Path, failures: list[str]) -> None:
    """The record parser and the image reader: every output is images or a failure with a reason."""
    for raw in outputs:
        parsed = check(failures, "parse_output", parse_output, raw)
        if parsed is None:
            continue
        loaded = check(failures, "load_images", parsed.load_images)
        reason = parsed.failure or (loaded if not isinstance(loaded, list) else None)
        usable = parsed.failure is None and isinstance(loaded, list)
        if not usable and not (reason and reason.reason and reason.detail):
            failures.append(f"no reason for a refused output: {str(raw)[:120]}")


def scorers(outputs: list[object], failures: list[str], monkeypatch, maze_doc: dict) -> None:
    """Scorers through their process_results: puzzle moves and images, an LPIPS metric (tiny images
    included), CLIP-choice steps and a multiple-choice answer."""
    from lmms_eval_unify.benchmarks.mme_unify.generation import score_generation
    from lmms_eval_unify.benchmarks.mme_unify.scoring import METRICS_ENV, score_multiple_choice, score_vcot
    from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle

    tiny = {"backbone": "tiny", "weights": "random"}
    monkeypatch.setenv(METRICS_ENV, json.dumps({"lpips": {"weights": "random"}, "clip_choice": tiny}))
    reference = Image.new("RGB", (48, 48), "blue")
    choice = {"choice": ["A. a", "B. b"], "answer": "A"}
    vcot_doc = {"step_images": [reference] * 3, "actions": ["up", "left"], "coordinates": ["[0, 0]", "[1, 1]"],
                "initial_image": reference, "grid_size": 3}  # fmt: skip
    for raw in outputs:
        for name, scored in (
            ("score_puzzle", lambda r=raw: score_puzzle(maze_doc, [r], domain="maze")),
            ("score_generation FIR", lambda r=raw: score_generation({"image": reference}, [r], subtask="FIR")),
            ("score_multiple_choice", lambda r=raw: score_multiple_choice(choice, [r])),
            ("score_vcot", lambda r=raw: score_vcot(vcot_doc, [r])),
        ):
            row = check(failures, name, scored)
            if row is not None and row.get("invalid_outputs") is None:
                failures.append(f"{name}: a row without invalid_outputs: {row}")


def samples_row(doc_id: object, raw: object) -> dict:
    return {"doc_id": doc_id, "filtered_resps": raw, "resps": [[raw]], "text_sample_acc": 0.0, "invalid_outputs": ""}


def hostile_run(run: Path, outputs: list[object]) -> Path:
    """A saved run of the outputs, whose samples file has corrupt, cut and wrong-shape lines, beside a results
    file that is not JSON and one that is a FIFO."""
    results = write_run(run, "m", {MAZE: [samples_row(i, raw) for i, raw in enumerate(outputs)]})
    samples = results.with_name(results.name.replace("_results.json", f"_samples_{MAZE}.jsonl"))
    rows = samples.read_text(encoding="utf-8")
    broken = ["{not json", "[1, 2]", json.dumps(samples_row("seven", "x")), '{"doc_id": 99, "resps": 5}',
              json.dumps(samples_row(98, "p" * LIMITS["samples_line_bytes"]))]  # fmt: skip
    samples.write_text(rows + "\n".join(broken) + '\n{"doc_id": 100, "filtered_re', encoding="utf-8")
    (run / "other").mkdir()
    (run / "other" / "20260101T000000_results.json").write_text("{garbage")
    os.mkfifo(run / "other" / "20260102T000000_results.json")
    return results


def score_command(run: Path, results: Path, outputs: list[object], failures: list[str], maze_doc: dict) -> None:
    """``score``: the saved runs, the samples files (broken lines reported with file:line), and the replayed
    records scored with the replay model's trust (the run's media folders only)."""
    from lmms_eval_unify.benchmarks.uni_mmmu.scoring import score_puzzle

    runs = check(failures, "saved_runs", saved_runs, run, io.StringIO())
    if runs is not None and [r.results_file for r in runs] != [results]:
        failures.append(f"saved_runs: {runs}")
    saved = check(failures, "read_saved_samples", read_saved_samples, results)
    if saved is None:
        return
    refusals = saved.broken.get(MAZE, [])
    lines = sorted(int(str(r).split(":", 2)[1]) for r in refusals if str(r).startswith(str(results.parent)))
    expected = list(range(len(outputs) + 1, len(outputs) + 7))
    if lines != expected or not all(r.reason for r in refusals):
        failures.append(f"read_saved_samples: broken lines {lines}, expected {expected}: {refusals}")
    trusted = [str(p) for p in saved_media_roots([results.parent])]
    with run_context(media_base=str(run / "scored" / "unify_media"), trusted_roots=trusted):
        for (_, _), responses in saved.responses.items():
            check(failures, "score (replayed)", score_puzzle, maze_doc, responses, domain="maze")


def gallery_and_export(tmp_path: Path, run: Path, failures: list[str]) -> None:
    from lmms_eval_unify.reports import exports, gallery

    check(failures, "gallery", gallery.main, [str(run), "-o", str(tmp_path / "site")])
    for benchmark in ("uni_mmmu", "mme_unify"):
        check(failures, f"export {benchmark}", exports.export, [run], benchmark, tmp_path / "exports" / benchmark)


def hostile_release(tmp_path: Path, outside: Path) -> Path:
    """A Uni-MMMU release whose jigsaw metadata names absolute, ``../``, symlinked-out, FIFO and non-string
    paths, beside a sliding summary that is not JSON and a geometry file with a dict where text belongs."""
    release = tmp_path / "release"
    folder = release / "data" / "jigsaw_dataset_2x2ref"
    png(folder / "ok.png")
    os.mkfifo(folder / "fifo.png")
    (folder / "link.png").symlink_to(outside / f"{FORBIDDEN_NAME}.png")
    paths = [str(outside / f"{FORBIDDEN_NAME}.png"), f"../../../outside/{FORBIDDEN_NAME}.png", "link.png",
             "fifo.png", {"path": "ok.png"}, ["ok.png"]]  # fmt: skip
    same = {"candidate_paths": ["ok.png", "ok.png"], "gt_completed_2x2_path": "ok.png", "gt_wrong_2x2_path": "ok.png"}
    items = [{"id": i, "label": 0, "ref_panel": {"ref_image_path": p}, **same} for i, p in enumerate(paths)]
    (folder / "metadata.json").write_text(json.dumps({"items": items}))
    (release / "data" / "sliding").mkdir(parents=True)
    (release / "data" / "sliding" / "summary_steps_le_8.json").write_text("{cut")
    (release / "data" / "math_data").mkdir(parents=True)
    geometry = {"g": {"k": {"problem_text_en": {"dict": "not text"}, "original_image": "/etc/hostname"}}}
    (release / "data" / "math_data" / "filtered.json").write_text(json.dumps(geometry))
    gap = tmp_path / "gap_release" / "data_1"
    (gap / "image").mkdir(parents=True)
    (gap / "prompt.json").write_text(json.dumps({"category": {"not": "text"}, "und_prompt": "q", "gen_prompt": "g",
                                                 "reference": "r"}))  # fmt: skip
    os.mkfifo(gap / "image" / "fifo.png")
    (gap / "image" / "out.png").symlink_to(outside / f"{FORBIDDEN_NAME}.png")
    return release


def data_prepare(tmp_path: Path, outside: Path, failures: list[str]) -> None:
    """``data prepare``: every hostile item is a problem, nothing is written, nothing outside is read."""
    from lmms_eval_unify.benchmarks.gapeval.offline.prepare import prepare as prepare_gapeval
    from lmms_eval_unify.benchmarks.uni_mmmu.offline.prepare import prepare as prepare_uni_mmmu

    release = hostile_release(tmp_path, outside)
    problems = check(failures, "prepare uni_mmmu", prepare_uni_mmmu, release, tmp_path / "prepared")
    if problems is not None and (len(problems) < 8 or (tmp_path / "prepared").exists()):
        failures.append(f"prepare uni_mmmu: every hostile item is a problem, nothing written: {problems}")
    outcome = check(failures, "prepare gapeval", prepare_gapeval, tmp_path / "gap_release", tmp_path / "gap_out")
    if outcome is not None and not outcome[2]:
        failures.append("prepare gapeval: a dict category and a FIFO image were not reported")


def task_data(tmp_path: Path, outside: Path, failures: list[str]) -> None:
    """Task data loading and the preflight's schema check: rows naming files outside the data folder, FIFOs,
    missing files; a parquet of the wrong schema, one that is not parquet, one that is a FIFO."""
    from lmms_eval_unify.puzzles.dataset import write_puzzles

    data = tmp_path / "data"
    write_puzzles(data / "uni_mmmu", 4, 1, seed=1)
    maze = data / "uni_mmmu" / "maze" / "test.parquet"
    table = pq.read_table(maze)
    os.mkfifo(data / "fifo.png")
    cells = table.column("initial_image").to_pylist()
    hostile = [str(outside / f"{FORBIDDEN_NAME}.png"), str(data / "fifo.png"), str(data / "gone.png")]
    for row, path in enumerate(hostile, 1):
        cells[row] = {"bytes": None, "path": path}
    kind = table.schema.field("initial_image").type
    table = table.set_column(table.column_names.index("initial_image"), "initial_image", pa.array(cells, kind))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(maze).metadata), maze)
    from lmms_eval import utils

    config = utils.load_yaml_config(str(Path(__file__).parents[1] / "tasks" / "uni_mmmu" / "uni_mmmu_maze.yaml"))
    loaded = check(failures, "checked_data_file", checked_data_file, maze, data)
    if loaded is not None:
        copy, refused = loaded
        rows = pq.read_table(copy).column(DATA_ERROR_KEY).to_pylist()
        if sorted(refused) != [1, 2, 3] or not all(rows[i] for i in (1, 2, 3)) or rows[0]:
            failures.append(f"checked_data_file: refused rows {refused}")
    if check(failures, "smoke_problem", smoke_problem, config, maze, data) is not None:
        failures.append("smoke_problem: a file with clean rows was reported")
    wrong = data / "wrong.parquet"
    pq.write_table(pa.table({"id": ["a"], "initial_image": [3], "steps": [json.dumps({"x": 1})]}), wrong)
    (data / "garbage.parquet").write_bytes(b"PAR1 not really")
    os.mkfifo(data / "fifo.parquet")
    for bad in (wrong, data / "garbage.parquet", data / "fifo.parquet", outside / f"{FORBIDDEN_NAME}.png"):
        if not check(failures, "smoke_problem", smoke_problem, config, bad, data):
            failures.append(f"smoke_problem: no problem for {bad.name}")


def judges(tmp_path: Path, failures: list[str]) -> None:
    """The judge cache (garbage, another schema, a FIFO) and judge reply parsing of hostile replies."""
    import sqlite3

    from lmms_eval_unify.judges.cache import JudgeCache
    from lmms_eval_unify.judges.parsing import FieldSpec, parse_reply

    caches = tmp_path / "caches"
    caches.mkdir()
    (caches / "garbage.sqlite").write_bytes(b"SQLite format 3\x00" + os.urandom(2000))
    with sqlite3.connect(caches / "other.sqlite") as conn:
        conn.execute("CREATE TABLE judgements (key TEXT, verdict INTEGER)")
    os.mkfifo(caches / "fifo.sqlite")
    for name in ("garbage.sqlite", "other.sqlite", "fifo.sqlite"):
        cache = check(failures, f"JudgeCache {name}", JudgeCache, caches / name)
        if cache is not None and (cache.moved_to is None or check(failures, "JudgeCache.get", cache.get, "k")):
            failures.append(f"JudgeCache {name}: not moved aside and rebuilt")
    specs = (FieldSpec.from_dict("score", {"type": "int", "min": 0, "max": 5}),)
    replies = ["", "null", "{" * 10_000, '{"score": "9"}', '{"score": 1e999}', "\ud800\x00", "x" * 100_000,
               '{"score": ' + "1" * 5000 + "}", '{"score": ' + "[" * 100_000 + "}", '{"score": [1, 2]}',
               "```json\n{\"score\": 3}\n```"]  # fmt: skip
    for reply in replies:
        outcome = check(failures, "parse_reply", parse_reply, reply, specs)
        if outcome is not None and not outcome.valid and not outcome.error:
            failures.append(f"parse_reply: an invalid reply without a reason: {reply[:40]!r}")


def maze_doc(tmp_path: Path) -> dict:
    import datasets

    from lmms_eval_unify.puzzles.dataset import write_puzzle_set

    path = write_puzzle_set("maze", 1, 3, tmp_path / "maze_docs" / "test.parquet")
    return datasets.Dataset.from_parquet(str(path))[0]


def test_no_hostile_input_escapes_a_reader_or_reads_outside_its_roots(corpus, monkeypatch):
    tmp_path, outside, run, root, outputs = corpus
    doc = maze_doc(tmp_path)
    results = hostile_run(run, outputs)
    failures: list[str] = []
    AUDIT.violations.clear()
    AUDIT.corpus, AUDIT.active = str(tmp_path.resolve()), True
    try:
        with run_context(media_base=str(run / "unify_media")):
            parse_and_load(outputs, root, failures)
            scorers(outputs, failures, monkeypatch, doc)
        score_command(run, results, outputs, failures, doc)
        gallery_and_export(tmp_path, run, failures)
        data_prepare(tmp_path, outside, failures)
        task_data(tmp_path, outside, failures)
        judges(tmp_path, failures)
    finally:
        AUDIT.active = False
    assert not AUDIT.violations, "\n".join(AUDIT.violations)
    assert not failures, "\n".join(failures)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink() and stat.S_ISREG(p.stat().st_mode)]
    assert not [p for p in written if FAKE_KEY.encode() in p.read_bytes()], "the API key was written to a file"
    copied = [Image.open(p).convert("RGB").getpixel((0, 0)) for p in (tmp_path / "site" / "media" / "full").iterdir()]
    assert copied and RED not in copied, "an image from outside the run's media folders was copied into the site"
