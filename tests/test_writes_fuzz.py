"""Every writer run against a folder full of traps (issue "One gate for every byte we write", item 5): the write
twin of tests/test_gate_fuzz.py.

Writers: ``leaderboard``, ``gallery``, ``export`` (Uni-MMMU and MME-Unify formats), ``score`` (its lock and sweep
of the run folder, and lmms-eval's results and samples writers as the run hooks replace them, called in process
for the scoring run), the run media store (images and records), the judge cache and data generation (parquet).
Each writer first runs into a clean folder; what it wrote there names the traps: the same folder is then built
again with, in turn, every top folder a symlink to a folder outside (``folders``), every file a symlink to a file
outside or to a path outside that does not exist (``symlinks``), and every file a FIFO, a read-only file or an
existing file (``special``). The writer runs again among them, and

* an audit hook (``sys.addaudithook``) sees every ``open`` for writing (mode ``w``/``a``/``x``/``+``, or
  ``O_WRONLY``/``O_RDWR``/``O_CREAT``/``O_TRUNC``/``O_APPEND``), ``os.rename``/``os.replace``, ``os.remove``,
  ``os.rmdir``, ``os.mkdir``, ``os.symlink``/``os.link``, ``shutil.*`` and ``sqlite3.connect``: none may land
  outside the writer's folder, a relative open for writing (the gate's, from a folder descriptor) must carry
  ``O_NOFOLLOW``, and a blocking open of a FIFO for writing is refused (and recorded) instead of hanging;
* no exception but the gate's own refusal escapes, and every file outside (the victims) is byte for byte and
  mode for mode what it was, with nothing created next to them.

The mutation it catches (tried once by hand): replacing ``write_or_record(out / "leaderboard.md", text, out,
tables)`` in ``reports/leaderboard.py`` by ``(out / "leaderboard.md").write_text(text)``: in the ``symlinks``
variant the audit records (and refuses) an open for writing of ``leaderboard.md`` that resolves to a victim
outside; in the ``special`` variant, a blocking open of the FIFO standing there.

The run's media store makes the configuration folder without following a symlink planted there, and writes
``model.json`` and every sample through the gate (the last test).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from leaderboard_runs import write_runs
from PIL import Image

from lmms_eval_unify.output.record import UnifiedOutput
from lmms_eval_unify.testing.synthetic import write_run
from lmms_eval_unify.writes import LOCK_FILE, WriteRefused

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PATH_EVENTS = {"os.remove": (0, 1), "os.rmdir": (0, 1), "os.mkdir": (0, 2), "shutil.rmtree": (0, 1)}
"""Event -> (index of the path, index of its dir_fd) in the audit arguments."""
PAIR_EVENTS = {"os.rename": (1, 3), "os.link": (1, 3), "os.symlink": (1, 2)}
"""Event -> (index of the destination, index of its dir_fd)."""
COPY_EVENTS = ("shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.copymode", "shutil.copystat")
STAMP = "20260101_000000"


# ---- the audit hook: every write, checked as it happens ---------------------------------------------------------
class WriteAudit:
    """Records writes that land outside ``root`` (inside ``corpus``), relative write opens that follow symlinks,
    and blocking write opens of FIFOs (refused), while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.root = "/nonexistent"
        self.corpus = "/nonexistent"
        self.writes = 0
        self.violations: list[str] = []
        self._inside = threading.local()

    def __call__(self, event: str, args: tuple) -> None:
        if not self.active or getattr(self._inside, "busy", False):
            return
        self._inside.busy = True
        try:
            problem = self._problem(event, args)
        except (OSError, ValueError, TypeError, IndexError):
            problem = None
        finally:
            self._inside.busy = False
        if problem:
            self.violations.append(problem)
            raise PermissionError(f"write audit: {problem}")

    def _problem(self, event: str, args: tuple) -> str | None:
        if event == "open":
            return self._open(args[0], args[1], args[2])
        if event in PATH_EVENTS:
            index, fd = PATH_EVENTS[event]
            return self._landing(event, args[index], args[fd] if len(args) > fd else None)
        if event in PAIR_EVENTS:
            index, fd = PAIR_EVENTS[event]
            return self._landing(event, args[index], args[fd] if len(args) > fd else None)
        if event in COPY_EVENTS:
            return self._landing(event, args[1], None)
        if event == "sqlite3.connect":
            database = os.fsdecode(args[0])
            if database.startswith("file:"):
                database = urllib.parse.unquote(database[5:].split("?", 1)[0])
            return self._landing(event, database, None)
        return None

    def _open(self, path: object, mode: object, flags: object) -> str | None:
        if isinstance(path, int):
            return None
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & WRITE_FLAGS
        )
        if not writing:
            return None
        text = os.fsdecode(path)
        nofollow = isinstance(flags, int) and bool(flags & os.O_NOFOLLOW)
        if not os.path.isabs(text):
            self.writes += 1
            return None if nofollow else f"a relative open for writing that follows symlinks: {text}"
        try:
            mode_there = os.stat(text).st_mode
        except OSError:
            mode_there = 0
        if stat.S_ISFIFO(mode_there) and not (isinstance(flags, int) and flags & os.O_NONBLOCK):
            return f"a blocking open of a FIFO for writing: {text}"
        return self._landing("open", text, None, follow=not nofollow)

    def _landing(self, event: str, path: object, dir_fd: object, follow: bool = False) -> str | None:
        """A problem when the write of ``path`` (relative to ``dir_fd``) lands in the corpus outside the root."""
        text = os.fsdecode(path)
        if not os.path.isabs(text):
            base = os.readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) else os.getcwd()
            text = os.path.join(base, text)
        landing = os.path.realpath(text) if follow else os.path.join(
            os.path.realpath(os.path.dirname(text)), os.path.basename(text)
        )  # fmt: skip
        if not landing.startswith(self.corpus + os.sep):
            return None
        self.writes += 1
        if landing == self.root or landing.startswith(self.root + os.sep):
            return None
        return f"{event} lands outside the writer's folder: {text} -> {landing}"


AUDIT = WriteAudit()
sys.addaudithook(AUDIT)  # audit hooks cannot be removed: it does nothing while inactive


# ---- inputs: saved runs with images -----------------------------------------------------------------------------
def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 12), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def image_run(runs: Path) -> Path:
    """Model ``m``'s saved run under ``runs``: three Uni-MMMU mazes and two MME-Unify FIR samples whose records
    name images in the run's media folder."""
    media = runs / "m" / "unify_media" / "m-1"
    rows: dict[str, list[dict]] = {"uni_mmmu_maze": [], "mme_unify_fir": []}
    for task in rows:
        for doc in range(3 if task == "uni_mmmu_maze" else 2):
            (media / task / str(doc)).mkdir(parents=True)
            (media / task / str(doc) / "image_00.png").write_bytes(png((40 * doc, 100, 200 if task[0] == "u" else 9)))
            record = UnifiedOutput("answer_and_image", text="Answer: up", images=[f"{task}/{doc}/image_00.png"])
            record.root = str(media)
            rows[task].append({"filtered_resps": record.to_json(), "target": "up", "text_sample_acc": 1.0})
    write_run(runs, "m", rows)
    return runs


# ---- the writers ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Writer:
    """A writer: ``prepare(base)`` builds its inputs under ``base`` and returns the folder it writes into;
    ``write(root, base)`` runs it."""

    name: str
    prepare: Callable[[Path], Path]
    write: Callable[[Path, Path], object]


def leaderboard(root: Path, base: Path) -> object:
    from lmms_eval_unify.reports.leaderboard import main

    return main([str(base / "runs"), "--benchmark", "mme_unify", "--bootstrap", "0", "-o", str(root)])


def gallery(root: Path, base: Path) -> object:
    from lmms_eval_unify.reports.gallery import main

    return main([str(base / "runs"), "-o", str(root)])


def export(benchmark: str) -> Callable[[Path, Path], object]:
    def run(root: Path, base: Path) -> object:
        from lmms_eval_unify.reports.exports import main

        return main([str(base / "runs"), "--benchmark", benchmark, "--out", str(root)])

    return run


def score(root: Path, base: Path) -> object:
    """``score`` on the run folder ``root``; the lmms-eval run it starts is played in process: the run hooks'
    writers of its results and samples files, under the scoring run's own folder lock."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    from lmms_eval_unify.commands import score
    from lmms_eval_unify.writes import folder_lock

    class Done:
        returncode = 0

    def replay(command: list[str]) -> Done:
        out = command[command.index("--output_path") + 1]
        with folder_lock(out, "lmms-eval"):
            tracker = EvaluationTracker(output_path=out)
            tracker.general_config_tracker.log_experiment_args("replay", "model_name=m", None, None, False)
            rows = [{"doc_id": i, "doc": {}, "target": "up", "doc_hash": "h", "arguments": [("prompt", {})],
                     "resps": [["up"]], "filtered_resps": ["up"]} for i in range(3)]  # fmt: skip
            tracker.save_results_aggregated({"results": {"uni_mmmu_maze": {"acc,none": 1.0}}}, None, STAMP)
            tracker.save_results_samples("uni_mmmu_maze", rows)
        return Done()

    original = score.subprocess.run
    score.subprocess.run = replay  # type: ignore[assignment]
    try:
        return score.main([str(root)])
    finally:
        score.subprocess.run = original


def media_store(root: Path, base: Path) -> object:
    from lmms_eval_unify.generation.media import MediaStore
    from lmms_eval_unify.output.record import UnifiedOutput

    store = MediaStore(root / "m-0123456789")
    for doc in range(3):
        for name, colour in (("image_00", "red"), ("step_01", "blue")):
            with contextlib.suppress(WriteRefused):
                store.save_image("toy", doc, name, Image.new("RGB", (8, 8), colour))
        with contextlib.suppress(WriteRefused):
            store.save_record("toy", doc, UnifiedOutput("image_only", images=[f"toy/{doc}/image_00.png"]))
    return None


def judge_cache(root: Path, base: Path) -> object:
    from lmms_eval_unify.judges.cache import JudgeCache
    from lmms_eval_unify.run.context import run_context

    with run_context(output_path=str(root)), contextlib.suppress(WriteRefused):
        cache = JudgeCache(root / "unify_media" / "judge_cache.sqlite")
        cache.put("k", "template", "model", ["a reply"])
    return None


def data_generate(root: Path, base: Path) -> object:
    from lmms_eval_unify.puzzles.dataset import write_puzzles

    with contextlib.suppress(WriteRefused):
        write_puzzles(root / "uni_mmmu", 2, 2, seed=0)
    return None


def outputs_folder(base: Path) -> Path:
    return base / "out"


def with_image_run(base: Path) -> Path:
    image_run(base / "runs")
    return base / "out"


def with_board_runs(base: Path) -> Path:
    write_runs(base, ["mme_unify"])
    return base / "out"


def score_prepare(base: Path) -> Path:
    image_run(base / "runs")
    return base / "runs" / "m"


WRITERS = [
    Writer("leaderboard", with_board_runs, leaderboard),
    Writer("gallery", with_image_run, gallery),
    Writer("export uni_mmmu", with_image_run, export("uni_mmmu")),
    Writer("export mme_unify", with_image_run, export("mme_unify")),
    Writer("score", score_prepare, score),
    Writer("media store", outputs_folder, media_store),
    Writer("judge cache", outputs_folder, judge_cache),
    Writer("data generate", outputs_folder, data_generate),
]
COMMANDS = ("leaderboard", "gallery", "export uni_mmmu", "export mme_unify", "score")
"""The writers that are commands: each holds its folder's lock."""


# ---- the traps --------------------------------------------------------------------------------------------------
def entries(root: Path) -> dict[str, str]:
    """Relative path -> ``dir``, ``file`` or ``other`` of everything under ``root`` (symlinks not followed)."""
    found = {}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder, name)
            mode = os.lstat(path).st_mode
            kind = "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
            found[str(path.relative_to(root))] = kind
    return found


def plant(root: Path, produced: dict[str, str], variant: str, outside: Path) -> int:
    """Plant the ``variant``'s traps at the entries the writer ``produced``; returns how many."""
    planted = 0
    trapped: list[str] = []
    for index, (relative, kind) in enumerate(sorted(produced.items())):
        if Path(relative).name == LOCK_FILE or any(relative.startswith(t + os.sep) for t in trapped):
            continue
        path = root / relative
        if kind == "dir":
            if variant == "folders":
                victim = outside / f"dir_{index}"
                victim.mkdir()
                for child, child_kind in produced.items():
                    if Path(child).parent == Path(relative) and child_kind == "file":
                        (victim / Path(child).name).write_text(f"victim in folder {index}")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.symlink_to(victim, target_is_directory=True)
                trapped.append(relative)
                planted += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if variant == "symlinks":
            target = outside / (f"victim_{index}" if index % 2 else f"absent_{index}")
            if index % 2:
                target.write_text(f"victim {index}")
            path.symlink_to(target)
        elif variant == "special":
            if index % 3 == 0:
                os.mkfifo(path)
            else:
                path.write_text("an earlier file")
                if index % 3 == 1:
                    path.chmod(0o444)
        else:
            continue
        planted += 1
    return planted


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: kind, mode and bytes (the link target of a symlink)."""
    seen = {}
    for path in sorted(folder.rglob("*")):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            seen[str(path)] = ("link", os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            seen[str(path)] = ("file", info.st_mode, path.read_bytes())
        else:
            seen[str(path)] = ("other", info.st_mode)
    return seen


@pytest.fixture
def quiet_run_state(monkeypatch, tmp_path):
    """The run hooks' writers installed (restored after), their run state fresh, our variables unset but the
    cache, and the redaction key made before anything is audited."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    from lmms_eval_unify import redaction
    from lmms_eval_unify.integration import run_hooks
    from lmms_eval_unify.run import context as run_context
    from lmms_eval_unify.run import status as run_status

    for name in [name for name in os.environ if name.startswith("LMMS_EVAL_UNIFY_")]:
        monkeypatch.delenv(name)
    for name in ("save_results_aggregated", "save_results_samples"):
        method = getattr(EvaluationTracker, name)
        monkeypatch.setattr(EvaluationTracker, name, getattr(method, "__wrapped__", method))
    run_hooks._guard_tracker_writers()
    monkeypatch.setattr(run_hooks, "_exit_code", None)
    monkeypatch.setattr(run_status, "_status", run_status.RunStatus())
    monkeypatch.setattr(run_context, "_current", None)
    redaction.redaction_key()


@pytest.mark.heavy
@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_no_writer_writes_outside_its_folder_whatever_stands_in_it(writer, tmp_path, quiet_run_state, capsys):
    clean = tmp_path / "clean"
    root = writer.prepare(clean)
    before = entries(root) if root.exists() else {}
    writer.write(root, clean)
    produced = {k: v for k, v in entries(root).items() if k not in before}
    assert produced, f"{writer.name} wrote nothing into a clean folder"
    failures: list[str] = []
    for variant in ("folders", "symlinks", "special"):
        base = tmp_path / variant
        outside = base / "outside"
        outside.mkdir(parents=True)
        root = writer.prepare(base)
        planted = plant(root, produced, variant, outside)
        if not planted:
            continue
        victims = snapshot(outside)
        AUDIT.violations.clear()
        AUDIT.writes = 0
        AUDIT.corpus, AUDIT.root, AUDIT.active = str(tmp_path.resolve()), str(root.resolve()), True
        try:
            status = writer.write(root, base)
        except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
            failures.append(f"{variant}: {type(exc).__name__}: {str(exc)[:300]}")
            status = None
        finally:
            AUDIT.active = False
        failures += [f"{variant}: {violation}" for violation in AUDIT.violations]
        if snapshot(outside) != victims:
            failures.append(f"{variant}: a file outside the writer's folder changed ({planted} traps)")
        if status not in (None, 0, 1, 2):
            failures.append(f"{variant}: exit status {status}")
    capsys.readouterr()
    assert not failures, "\n".join(failures)


@pytest.mark.heavy
@pytest.mark.parametrize("writer", [w for w in WRITERS if w.name in COMMANDS], ids=lambda w: w.name)
def test_every_command_removes_what_an_interrupted_writer_left_and_says_so(writer, tmp_path, quiet_run_state, capsys):
    root = writer.prepare(tmp_path)
    (root / "sub").mkdir(parents=True)
    leftovers = [root / ".leaderboard.md.0123456789abcdef.tmp", root / "sub" / ".image.png.fedcba9876543210.tmp"]
    for path in leftovers:
        path.write_bytes(b"half a file")
    assert writer.write(root, tmp_path) == 0
    assert not any(path.exists() for path in leftovers)
    said = capsys.readouterr().err
    assert f"removed 2 unfinished temporary file(s) of an interrupted write under {root.resolve()}" in said


def test_model_json_is_not_written_through_a_symlinked_configuration_folder(scripted, tmp_path):
    from lmms_eval_unify.generation.media import configuration_folder

    model = scripted([])
    outside = tmp_path.parent / f"{tmp_path.name}_outside"
    outside.mkdir()
    (tmp_path / configuration_folder(model.model_id, model.describe())).symlink_to(outside, target_is_directory=True)
    with contextlib.suppress(WriteRefused):
        model.media  # noqa: B018 - made on first use, with its model.json
    assert list(outside.iterdir()) == []
