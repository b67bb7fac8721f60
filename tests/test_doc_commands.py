"""Every command the README and docs show is one the tools accept, and the cheap ones run as written.

Commands are read from fenced shell blocks (and README/doc inline spans that start with ``lmms-eval``):
- ``lmms-eval-unify SUB …``: the subcommand exists and every ``--flag`` shown is in its ``--help``;
- ``lmms-eval … --model M --tasks T``: ``M`` is a registered model and every name in ``T`` an indexed task
  or group (placeholders such as ``M``, ``...`` are skipped);
- ``lmms-eval-unify data generate …``, ``tasks`` and ``tasks-path`` are run for real, with their output
  folder moved under a temporary directory and ``--n`` capped;
- README blocks made only of ``lmms-eval`` and those cheap commands are run line by line as a new user on a
  fresh clone would (offline, no cached data or weights): each ends with exit status 0 or stops at the
  preflight, before any sample, naming what it needs; the README names every variable those fixes set;
- scripts the docs run (``bash scripts/….sh``) exist, and ``pytest -m EXPR`` names only declared markers.
The README's installer lines (network, minutes) and test-suite runs are only checked, not run.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "tasks").glob("*/README.md")])
SHELL_FENCES = {"", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*```(\w*)\s*$")
INLINE = re.compile(r"`((?:\.venv/bin/)?lmms-eval(?:-unify)? [^`]+)`")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z_]*|\.\.\.|…|<.*>|\{.*\}|\[.*\])$")
SUBCOMMANDS = {"data": 2, "judge": 2, "env": 2}
"""Subcommands with their own subcommands (``data generate``, ``data prepare``, ``judge serve``, ``env create``)."""


@dataclass(frozen=True)
class DocCommand:
    where: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: {' '.join(self.words)}"


def _shell_blocks(text: str) -> tuple[list[list[str]], list[str]]:
    """The fenced shell blocks, each as its lines (continuations joined), and the inline ``lmms-eval…`` spans."""
    blocks: list[list[str]] = []
    spans: list[str] = []
    fence, pending = None, ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if match:
            fence = match.group(1) if fence is None else None
            if fence in SHELL_FENCES:
                blocks.append([])
            continue
        if fence in SHELL_FENCES:
            pending += line.rstrip().removesuffix("\\") + " "
            if not line.rstrip().endswith("\\"):
                blocks[-1].append(pending.strip())
                pending = ""
        elif fence is None:
            spans += INLINE.findall(line)
    return blocks, spans


def _shell_lines(text: str) -> list[str]:
    """Lines of fenced shell blocks (continuations joined) and inline ``lmms-eval…`` spans."""
    blocks, spans = _shell_blocks(text)
    return [line for block in blocks for line in block] + spans


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in a synopsis
        return line.split()


def doc_commands(tool: str) -> list[DocCommand]:
    """Every invocation of ``tool`` shown in the docs, from the tool name on (env prefixes dropped)."""
    found = []
    for path in DOC_FILES:
        for line in _shell_lines(path.read_text(encoding="utf-8")):
            for part in re.split(r"&&|\|\||;|\|", line):
                words = _words(part)
                names = [Path(w).name for w in words]
                if tool in names:
                    start = names.index(tool)
                    found.append(DocCommand(str(path.relative_to(ROOT)), tuple(words[start + 1 :])))
    return found


def _subcommand(words: tuple[str, ...]) -> tuple[str, ...]:
    depth = SUBCOMMANDS.get(words[0], 1) if words else 0
    return words[:depth]


@functools.cache
def _help(subcommand: tuple[str, ...]) -> str:
    done = subprocess.run(
        [str(BIN / "lmms-eval-unify"), *subcommand, "--help"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"`lmms-eval-unify {' '.join(subcommand)} --help` failed:\n{done.stderr}"
    return done.stdout


def _flags(words: tuple[str, ...]) -> set[str]:
    flags = set()
    for word in words:
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9_-]*", word):
            flags.add(flag)
    return flags


def test_docs_show_commands_of_both_tools():
    assert len(doc_commands("lmms-eval-unify")) >= 5
    assert len(doc_commands("lmms-eval")) >= 5


@pytest.mark.subprocess
def test_every_documented_subcommand_and_flag_exists():
    problems = []
    for command in doc_commands("lmms-eval-unify"):
        subcommand = _subcommand(command.words)
        if not subcommand or subcommand[-1].startswith("-") or PLACEHOLDER.match(subcommand[-1]):
            continue
        if subcommand == ("data", "prepare"):
            subcommand = command.words[:3]  # its help is the benchmark's own
            if len(subcommand) < 3 or PLACEHOLDER.match(subcommand[2]):
                continue
        try:
            help_text = _help(subcommand)
        except AssertionError as exc:
            problems.append(f"{command}\n    {exc}")
            continue
        missing = sorted(flag for flag in _flags(command.words) if flag not in help_text)
        if missing:
            problems.append(f"{command}\n    flags not in its --help: {', '.join(missing)}")
    assert not problems, "\n".join(problems)


@functools.cache
def _known_tasks() -> frozenset[str]:
    from lmms_eval.tasks import TaskManager

    return frozenset(TaskManager("ERROR").all_tasks)


@functools.cache
def _known_models() -> frozenset[str]:
    """Registered models, plus the out-of-tree example models the docs define (``model_id = "…"``)."""
    from lmms_eval.models import list_available_models

    defined = {m for path in DOC_FILES for m in re.findall(r'model_id = "(\w+)"', path.read_text("utf-8"))}
    return frozenset(list_available_models(include_aliases=True)) | defined


def _option(words: tuple[str, ...], name: str) -> str | None:
    for index, word in enumerate(words):
        if word == name and index + 1 < len(words):
            return words[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


@pytest.mark.heavy  # lmms-eval's task index
def test_every_documented_model_and_task_exists():
    problems = []
    for command in doc_commands("lmms-eval"):
        model, tasks = _option(command.words, "--model"), _option(command.words, "--tasks")
        if model and not PLACEHOLDER.match(model) and model not in _known_models():
            problems.append(f"{command}\n    unknown model {model!r}")
        for task in (tasks or "").split(","):
            if task and not PLACEHOLDER.match(task) and task != "list" and task not in _known_tasks():
                problems.append(f"{command}\n    unknown task or group {task!r}")
    assert not problems, "\n".join(problems)


CHEAP = {("tasks",), ("tasks-path",), ("data", "generate")}


def _runnable(words: tuple[str, ...], tmp_path: Path) -> list[str] | None:
    """The command with its output folder under ``tmp_path`` (a placeholder such as ``DATA`` is a name there
    too) and ``--n`` at most 2; None if not cheap or still a synopsis (placeholders, optional brackets)."""
    if _subcommand(words) not in CHEAP:
        return None
    words = list(words)
    for index, word in enumerate(words[:-1]):
        if word == "--out":
            words[index + 1] = str(tmp_path / Path(words[index + 1]).name)
        if word == "--n" and words[index + 1].isdigit():
            words[index + 1] = str(min(2, int(words[index + 1])))
    if any(PLACEHOLDER.match(w) or "[" in w or "…" in w for w in words):
        return None
    if "--out" in words and "--n" not in words:
        words += ["--n", "2"]
    return words


@pytest.mark.subprocess
def test_cheap_documented_commands_run_as_written(tmp_path):
    ran, problems = 0, []
    for command in doc_commands("lmms-eval-unify"):
        words = _runnable(command.words, tmp_path)
        if words is None:
            continue
        done = subprocess.run(
            [str(BIN / "lmms-eval-unify"), *words], capture_output=True, text=True, timeout=600, cwd=tmp_path
        )
        ran += 1
        if done.returncode != 0:
            problems.append(f"{command}\n    exit {done.returncode}: {done.stderr[-2000:]}")
    assert ran >= 2, "the docs show no cheap command any more: the test would check nothing"
    assert not problems, "\n".join(problems)


def test_the_data_folder_placeholder_is_run_under_the_temporary_folder(tmp_path):
    words = ("data", "generate", "x", "--out", "DATA", "--n", "100")
    assert _runnable(words, tmp_path) == ["data", "generate", "x", "--out", str(tmp_path / "DATA"), "--n", "2"]
    assert _runnable(("data", "generate", "BENCHMARK…", "--out", "DIR"), tmp_path) is None


TOOLS = ("lmms-eval", "lmms-eval-unify")
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
PREFLIGHT_STOP = "nothing was generated"
"""What the preflight prints when it stops a run before the model is built (integration/preflight.py)."""
FIX_VARIABLE = re.compile(r"\b(LMMS_EVAL_UNIFY_[A-Z_]+)=")
"""A variable a preflight fix tells the user to set."""


def _run_line(line: str, cwd: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess]:
    """Run a README line's ``&&``-joined commands in ``cwd`` (our tools from this environment, cheap
    ``lmms-eval-unify`` commands capped as in ``_runnable``), stopping at the first failure."""
    done = []
    for part in line.split("&&"):
        words = _words(part)
        assignments = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words if ASSIGNMENT.match(w)}
        words = [w for w in words if not ASSIGNMENT.match(w)]
        tool = Path(words[0]).name
        arguments = _runnable(tuple(words[1:]), cwd) if tool == "lmms-eval-unify" else words[1:]
        assert arguments is not None, f"not a runnable command: {part}"
        done.append(
            subprocess.run(
                [str(BIN / tool), *arguments],
                cwd=cwd,
                env={**env, **assignments},
                capture_output=True,
                text=True,
                timeout=600,
            )
        )
        if done[-1].returncode != 0:
            break
    return done


def _readme_runnable_blocks() -> list[list[str]]:
    """README blocks whose every command is ``lmms-eval`` or a cheap ``lmms-eval-unify`` one."""

    def runnable(line: str) -> bool:
        for part in line.split("&&"):
            words = [w for w in _words(part) if not ASSIGNMENT.match(w)]
            if not words or Path(words[0]).name not in TOOLS:
                return False
            if Path(words[0]).name == "lmms-eval-unify" and _subcommand(tuple(words[1:])) not in CHEAP:
                return False
        return True

    blocks, _ = _shell_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    return [block for block in blocks if block and all(runnable(line) for line in block)]


def _fresh_user_env(home: Path) -> dict[str, str]:
    """This environment as a new user's: offline, an empty home (no Hub cache, no DreamSim weights), none of
    our variables set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_EVAL_UNIFY_", "HF_", "TORCH_HOME"))}
    return {**env, "HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@pytest.mark.slow
def test_readme_commands_run_as_written_or_say_first_what_they_need(tmp_path):
    blocks = _readme_runnable_blocks()
    completed, stopped, problems = 0, 0, []
    for index, block in enumerate(blocks):
        cwd = tmp_path / f"block{index}"
        (cwd / "home").mkdir(parents=True)
        env = _fresh_user_env(cwd / "home")
        for line in block:
            done = _run_line(line, cwd, env)
            last = done[-1]
            if last.returncode == 0:
                continue
            if PREFLIGHT_STOP not in last.stderr:
                problems.append(
                    f"README: {line}\n    exit {last.returncode} without a preflight: {last.stderr[-2000:]}"
                )
            elif list(cwd.rglob("*_samples_*.jsonl")) or list(cwd.rglob("unify_media/*/*")):
                problems.append(f"README: {line}\n    the preflight stopped it after work was done")
            else:
                needed = set(FIX_VARIABLE.findall(last.stderr))
                unnamed = sorted(v for v in needed if v not in (ROOT / "README.md").read_text(encoding="utf-8"))
                if unnamed:
                    problems.append(f"README: {line}\n    needs {unnamed}, which the README does not name")
                stopped += 1
            break
        else:
            completed += 1
    assert not problems, "\n".join(problems)
    assert completed >= 1 and stopped >= 1, (
        f"{completed} README block(s) ran to the end and {stopped} stopped at the preflight: the README should "
        "show both an offline run and a run that needs outside data"
    )


def test_scripts_the_docs_run_exist():
    scripts = [
        words[0] for command in doc_commands("bash") if (words := [w for w in command.words if not w.startswith("-")])
    ]
    assert scripts, "the docs run no script any more: the check would check nothing"
    missing = [script for script in scripts if not PLACEHOLDER.match(script) and not (ROOT / script).is_file()]
    assert not missing, missing


def test_pytest_marker_expressions_in_the_docs_are_declared():
    declared = {
        line.split(":")[0]
        for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    }
    used = set()
    for command in doc_commands("pytest"):
        expression = _option(command.words, "-m")
        if expression:
            used |= set(re.findall(r"[a-z_]+", expression)) - {"and", "or", "not"}
    assert used, "the docs show no `pytest -m` tier any more: the check would check nothing"
    assert used <= declared, sorted(used - declared)


@pytest.mark.parametrize(
    ("tool", "line", "expected"),
    [
        (
            "lmms-eval",
            "LMMS_EVAL_UNIFY_DATA_DIR=/d lmms-eval --model m --tasks t",
            ("--model", "m", "--tasks", "t"),
        ),
        ("lmms-eval-unify", ".venv/bin/lmms-eval-unify demo --out x && echo hi", ("demo", "--out", "x")),
        (
            "lmms-eval-unify",
            "lmms-eval-unify leaderboard runs/ \\\n    --benchmark all",
            ("leaderboard", "runs/", "--benchmark", "all"),
        ),
    ],
)
def test_commands_are_read_from_the_tool_name_on(tmp_path, monkeypatch, tool, line, expected):
    doc = tmp_path / "doc.md"
    doc.write_text(f"text `lmms-eval-unify tasks`\n\n```bash\n{line}\n```\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "DOC_FILES", [doc])
    commands = [c.words for c in doc_commands(tool)]
    assert expected in commands
