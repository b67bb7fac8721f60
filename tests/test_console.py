"""Any locale: every ``lmms-eval-unify`` command prints under an ASCII terminal (what it cannot show is
escaped, ``‡`` as ``\\u2021``) and writes its files as UTF-8; every text file we open names its encoding."""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN
from leaderboard_runs import limited, unified_model_tasks

from lmms_eval_unify.console import can_encode, tolerate_any_locale
from lmms_eval_unify.testing.synthetic import write_run

REPO = Path(__file__).resolve().parents[1]
MODEL = "modèle‡"
ESCAPED = "mod\\xe8le\\u2021"
ASCII_TERMINAL = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
TEXT_OPENERS = {"open", "write_text", "read_text", "TextIOWrapper", "fdopen"}
BINARY_OWNERS = {"Image", "av", "os", "gate", "writes", "tarfile", "zipfile"}
"""``Image.open``, ``os.open`` and the like are not text files (``os.fdopen`` is checked by its mode); ``gate`` and
``writes`` read and write text as UTF-8 by contract."""


def ascii_stream(errors: str = "strict") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors=errors)


def test_a_stream_that_cannot_encode_our_text_escapes_it_instead_of_raising():
    stream = ascii_stream()
    with pytest.raises(UnicodeEncodeError):
        stream.write(MODEL)
    tolerate_any_locale((stream,))
    stream.write(MODEL)
    stream.flush()
    assert stream.buffer.getvalue().decode("ascii").endswith(ESCAPED)  # type: ignore[attr-defined]


def test_a_stream_that_can_encode_is_left_alone():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    tolerate_any_locale((stream,))
    assert stream.errors == "strict" and can_encode(stream)
    assert not can_encode(ascii_stream()) and not can_encode(io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))


# ---- every file we open as text names its encoding (the locale's default is not UTF-8 everywhere) ----------
def text_opens_without_encoding(path: Path, base: Path = REPO) -> list[str]:
    """``open``/``write_text``/``read_text``/... calls of ``path`` in text mode that do not pass ``encoding``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or any(k.arg == "encoding" for k in node.keywords):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name not in TEXT_OPENERS or (owner in BINARY_OWNERS and (owner, name) != ("os", "fdopen")):
            continue
        if isinstance(func, ast.Name) and name in ("read_text", "write_text"):
            continue  # ``gate.read_text`` / ``writes.write_text`` imported by name: UTF-8 by contract
        position = 1 if isinstance(func, ast.Name) or name == "fdopen" else 0
        modes = [k.value for k in node.keywords if k.arg == "mode"] + node.args[position : position + 1]
        if name in ("open", "fdopen") and any(isinstance(m, ast.Constant) and "b" in str(m.value) for m in modes):
            continue
        found.append(f"{path.relative_to(base)}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_every_text_file_we_open_names_its_encoding():
    files = [p for folder in ("lmms_eval_unify", "model_adapters") for p in (REPO / folder).rglob("*.py")]
    found = [line for path in files if "__pycache__" not in path.parts for line in text_opens_without_encoding(path)]
    assert not found, "pass encoding='utf-8':\n" + "\n".join(found)


def test_the_check_sees_a_text_open_and_passes_binary_ones(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "open(p)\nopen(p, 'rb')\nPath(p).write_text(t)\nPath(p).open('wb')\nImage.open(p)\nos.open(p, flags)\n"
        "os.fdopen(d, 'w')\nos.fdopen(d, 'rb')\nopen(p, encoding='utf-8')\n",
        encoding="utf-8",
    )
    found = [line.split(": ", 1)[1] for line in text_opens_without_encoding(module, tmp_path)]
    assert found == ["open(p)", "Path(p).write_text(t)", "os.fdopen(d, 'w')"]


# ---- every subcommand, as a user runs it, under an ASCII terminal --------------------------------------------
@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A folder with a non-ASCII name holding a saved run of the model ``modèle‡`` (one --limit task, so the
    leaderboard marks cells ``‡``) and a run whose samples file is cut (``score`` reports it)."""
    root = tmp_path_factory.mktemp("locale") / "runs‡"
    tasks = {t: rows for b in ("uni_mmmu", "mme_unify") for t, rows in unified_model_tasks()[b].items()}
    limited(write_run(root / "runs", MODEL, tasks), "uni_mmmu_maze", 1, 5)
    results = write_run(root / "cut", MODEL, {"uni_mmmu_maze": [{"text_step_acc": 1.0}] * 3})
    summary = json.loads(results.read_text(encoding="utf-8"))
    summary["config"] |= {"model": "unify_random", "resolved_cli_args": {"tasks": "uni_mmmu_maze"}}
    results.write_text(json.dumps(summary), encoding="utf-8")
    samples = next(results.parent.glob("*_samples_uni_mmmu_maze.jsonl"))
    samples.write_text(samples.read_text(encoding="utf-8")[:-20], encoding="utf-8")
    return root


def run_ascii(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``lmms-eval-unify ARGS`` under an ASCII terminal, offline, with none of our variables set; its output
    must be ASCII (decoding it fails otherwise)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_EVAL_UNIFY_")}
    env |= {**ASCII_TERMINAL, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([str(BIN / "lmms-eval-unify"), *args], env=env, capture_output=True, timeout=timeout)
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")
    assert "Traceback" not in err, err[-3000:]
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


@pytest.mark.subprocess
def test_leaderboard_prints_its_marks_escaped_and_writes_utf8(root):
    done = run_ascii("leaderboard", str(root / "runs"), "-o", str(root / "board"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"\\u2021 {ESCAPED}" in done.stdout and f"| {ESCAPED} |" in done.stdout  # the ‡ mark and the name
    assert f"‡ {MODEL}" in (root / "board" / "leaderboard.md").read_text(encoding="utf-8")
    assert MODEL in (root / "board" / "uni_mmmu_table2.csv").read_text(encoding="utf-8")
    assert list((root / "board").glob("*.png")) and (root / "board" / "manifest.json").is_file()


@pytest.mark.subprocess
def test_score_names_a_damaged_run_under_an_ascii_terminal(root):
    done = run_ascii("score", str(root / "cut"))
    assert done.returncode == 1
    assert "uni_mmmu_maze not scored again" in done.stderr and f"cut/{ESCAPED}/" in done.stderr


@pytest.mark.subprocess
def test_gallery_and_export_of_a_non_ascii_model(root):
    done = run_ascii("gallery", str(root / "runs"), "-o", str(root / "site"))
    assert done.returncode == 0 and "\\u2021" in done.stdout + done.stderr
    assert MODEL in (root / "site" / "index.html").read_text(encoding="utf-8")
    done = run_ascii("export", str(root / "runs"), "--benchmark", "uni_mmmu", "--out", str(root / "export"))
    assert done.returncode == 0, done.stderr[-3000:]
    (summary,) = (root / "export").rglob("summary.json")  # under a folder named for the model, ASCII-safe
    assert MODEL in summary.read_text(encoding="utf-8")


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (("check-adapter", "unify_oracle", "--output_dir", "{root}/check"), 0, "all 7 claimed protocols work"),
        (("env", "create", MODEL), 1, f"no pins for '{ESCAPED}'"),
        (("doctor",), 0, "every model plugin loads"),
        (("data", "generate", "uni_mmmu", "--out", "{root}/data", "--n", "1"), 0, "runs\\u2021/data"),
        (("data", "prepare", "uni_mmmu", "--root", "{root}/release", "--out", "{root}/prepared"), 1, "runs\\u2021"),
        (("tasks",), 0, "uni_mmmu_maze\ttask"),
        (("tasks-path",), 0, "tasks"),
    ],
)
def test_every_other_command_runs_under_an_ascii_terminal(root, args, status, says):
    done = run_ascii(*(a.format(root=root) for a in args))
    assert done.returncode == status, done.stderr[-3000:]
    assert says in done.stdout + done.stderr


@pytest.mark.subprocess
def test_judge_serve_prints_its_exports_under_an_ascii_terminal():
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_EVAL_UNIFY_")} | ASCII_TERMINAL
    command = [str(BIN / "lmms-eval-unify"), "judge", "serve"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            lines = [process.stdout.readline().decode("ascii") for _ in range(2)]  # type: ignore[union-attr]
        finally:
            process.terminate()
            _, err = process.communicate(timeout=60)
    assert lines[0].startswith("# reference judges") and "LMMS_EVAL_UNIFY_JUDGE_BASE_URL=http://127.0.0.1" in lines[1]
    assert b"Traceback" not in err


@pytest.mark.slow
def test_demo_prints_its_table_under_an_ascii_terminal(root):
    """The demo's table holds en dashes and daggers; lmms-eval runs inside it with our plugin loaded."""
    done = run_ascii("demo", "--out", str(root / "demo"), "--n", "2", "--random-seeds", "1", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| unify_oracle | uni_mmmu_maze | 100.0 |" in done.stdout and "\\u2013" in done.stdout
