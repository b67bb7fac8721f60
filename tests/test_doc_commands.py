"""Every command the README and docs show is one the tools accept, and the cheap ones run as written.

Commands are read from fenced shell blocks (and README/doc inline spans that start with ``lmms-eval``):
- ``lmms-eval-unify SUB …``: the subcommand exists and every ``--flag`` shown is in its ``--help``;
- ``lmms-eval … --model M --tasks T``: ``M`` is a registered model and every name in ``T`` an indexed task
  or group (placeholders such as ``M``, ``...`` are skipped);
- ``lmms-eval-unify data generate …``, ``tasks`` and ``tasks-path`` are run for real, with their output
  folder moved under a temporary directory and ``--n`` capped.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
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
SUBCOMMANDS = {"data": 2}
"""Subcommands with their own subcommands (``data generate``, ``data prepare``)."""


@dataclass(frozen=True)
class DocCommand:
    where: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: {' '.join(self.words)}"


def _shell_lines(text: str) -> list[str]:
    """Lines of fenced shell blocks (continuations joined) and inline ``lmms-eval…`` spans."""
    lines, fence, pending = [], None, ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if match:
            fence = match.group(1) if fence is None else None
            continue
        if fence in SHELL_FENCES:
            pending += line.rstrip().removesuffix("\\") + " "
            if not line.rstrip().endswith("\\"):
                lines.append(pending.strip())
                pending = ""
        elif fence is None:
            lines += INLINE.findall(line)
    return lines


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
    """The command with its output folder under ``tmp_path`` and ``--n`` at most 2; None if not cheap or
    still a synopsis (placeholders, optional brackets)."""
    if _subcommand(words) not in CHEAP or any(PLACEHOLDER.match(w) or "[" in w or "…" in w for w in words):
        return None
    words = list(words)
    for index, word in enumerate(words[:-1]):
        if word == "--out":
            words[index + 1] = str(tmp_path / Path(words[index + 1]).name)
        if word == "--n":
            words[index + 1] = str(min(2, int(words[index + 1])))
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
