"""The registry of our environment variables: parsers, the check every command and run makes, and that no
variable escapes it (every name in the source is registered; no module reads one behind its back)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path

import pytest
from cli_runs import BIN

from lmms_eval_unify import cli, env_vars, gate
from lmms_eval_unify.benchmarks import BENCHMARKS
from lmms_eval_unify.env_vars import MalformedVariable, malformed, parse, read, variable
from lmms_eval_unify.testing.synthetic import write_run

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("lmms_eval_unify", "model_adapters", "tasks", "scripts", "bench", "docs")
PACKAGES = {"lmms_eval_unify": "lmms_eval_unify", "model_adapters": "lmms_eval_unify.model_adapters"}
"""Source folder -> its import name."""
NAME = re.compile(r"LMMS_EVAL_UNIFY_[\w<>{}*]*")
READS_ITSELF = {"lmms_eval_unify/env_vars.py", "lmms_eval_unify/gate.py"}
"""The registry, and the gate, which reads ``$LMMS_EVAL_UNIFY_LIMITS`` with the registry's parser itself (it
imports nothing of ours)."""
NOT_YET_MOVED: set[str] = set()
"""Modules that still read their variables themselves (the judge settings): the check at start-up covers their
values, but they parse them a second time. Remove an entry once the module reads through ``env_vars.read``."""


@pytest.fixture(autouse=True)
def no_variables_of_ours(monkeypatch):
    for name in [name for name in os.environ if name.startswith(env_vars.PREFIX)]:
        monkeypatch.delenv(name)


# ---- parsers ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("LMMS_EVAL_UNIFY_TINY_METRICS", "On", True),
        ("LMMS_EVAL_UNIFY_SKIP_PREFLIGHT", "0", False),
        ("LMMS_EVAL_UNIFY_DECODE_WORKERS", " 4 ", 4),
        ("LMMS_EVAL_UNIFY_PROBE_TIMEOUT", "7.5", 7.5),
        ("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY", '{"a": {"b": 1}}', {"a": {"b": 1}}),
        ("LMMS_EVAL_UNIFY_METRIC_VARIANT", "standard", "standard"),
        ("LMMS_EVAL_UNIFY_DEVICE", "cuda:1", "cuda:1"),
        ("LMMS_EVAL_UNIFY_MEDIA_ROOTS", f"/a{os.pathsep}{os.pathsep}/b", ["/a", "/b"]),
        ("LMMS_EVAL_UNIFY_LIMITS", '{"text_chars": 5}', gate.Limits(text_chars=5)),
        ("LMMS_EVAL_UNIFY_CLIP_VIT_H_14_CKPT", "/w.pt", "/w.pt"),  # a family: CLIP_*_CKPT
        ("LMMS_EVAL_UNIFY_DATA_DIR", "   ", None),  # blank is unset
    ],
)
def test_each_parser_reads_a_good_value(name, raw, value):
    assert parse(name, raw) == value


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("LMMS_EVAL_UNIFY_TINY_METRICS", "maybe", "must be 1 or 0"),
        ("LMMS_EVAL_UNIFY_DECODE_WORKERS", "0", "at least 1"),
        ("LMMS_EVAL_UNIFY_JUDGE_CONCURRENCY", "many", "at least 1"),
        ("LMMS_EVAL_UNIFY_JUDGE_TIMEOUT", "inf", "positive number of seconds"),
        ("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "localhost:8000/v1", "http:// or https://"),
        ("LMMS_EVAL_UNIFY_JUDGE_EXTRA_BODY", "[1]", "JSON object, not list"),
        ("LMMS_EVAL_UNIFY_METRIC_DTYPE", "fp8", "one of auto, fp32, bf16, fp16"),
        ("LMMS_EVAL_UNIFY_LIMITS", '{"text_char": 5}', "unknown keys ['text_char']"),
        ("LMMS_EVAL_UNIFY_LIMITS", "{cut", "is not JSON"),
        ("LMMS_EVAL_UNIFY_UNI_MMMU_METRICS", '{"dreamsim": 1}', "must map each name to a JSON object"),
    ],
)
def test_a_malformed_value_names_the_variable_the_problem_and_the_fix(name, raw, says):
    with pytest.raises(MalformedVariable) as caught:
        parse(name, raw)
    message = str(caught.value)
    assert message.startswith(f"${name} ") and says in message and f"fix: {variable(name).fix}" in message
    assert isinstance(caught.value, ValueError)


def test_the_limits_are_parsed_once_by_the_gate_s_own_parser(monkeypatch):
    monkeypatch.setenv(gate.LIMITS_ENV, '{"text_chars": 7}')
    assert read(gate.LIMITS_ENV) is gate.limits()  # the same cached parse
    monkeypatch.setenv(gate.LIMITS_ENV, '{"text_chars": "lots"}')
    with pytest.raises(ValueError, match="LMMS_EVAL_UNIFY_LIMITS must give every limit as a positive integer"):
        gate.limits()


def test_malformed_lists_every_bad_variable_hides_secrets_and_leaves_unknown_names_alone():
    environ = {
        "LMMS_EVAL_UNIFY_LIMITS": "[]",
        "LMMS_EVAL_UNIFY_DATA_DIR": "/data",
        "LMMS_EVAL_UNIFY_JUDGE_API_KEY": "sk-secret",
        "LMMS_EVAL_UNIFY_SOMETHING_NEWER": "x",
        "HOME": "/root",
    }
    assert [p.variable.name for p in malformed(environ)] == ["LMMS_EVAL_UNIFY_LIMITS"]
    hidden = env_vars.Variable("LMMS_EVAL_UNIFY_X", env_vars.flag, "", "0 or 1", secret=True)
    assert "sk-secret" not in str(MalformedVariable(hidden, "sk-secret", "must be 1 or 0"))


def test_reading_an_unregistered_variable_is_an_error():
    with pytest.raises(KeyError, match="not in the registry"):
        read("LMMS_EVAL_UNIFY_NOT_A_THING")


# ---- nothing escapes the registry ------------------------------------------------------------------------
def source_files() -> list[Path]:
    """Our code, task files, scripts and docs (README included; the CHANGELOG is history)."""
    files = [REPO / "README.md"]
    for folder in SOURCES:
        files += [p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in {".py", ".yaml", ".md", ".sh"}]
    return [p for p in files if "__pycache__" not in p.parts]


def test_every_variable_named_in_the_source_and_docs_is_registered():
    """A new variable cannot skip the registry: naming it anywhere without registering it fails here."""
    names = set()
    for path in source_files():
        for token in NAME.findall(path.read_text(encoding="utf-8")):
            if not any(mark in token for mark in "<{*") and token.rstrip("_") != env_vars.PREFIX.rstrip("_"):
                names.add(token.rstrip("_"))
    unknown = []
    for name in sorted(names):
        try:
            variable(name)
        except KeyError:
            unknown.append(name)
    assert not unknown, f"register these in lmms_eval_unify/env_vars.py: {unknown}"
    assert len(names) > 30  # the scan sees them


def test_docs_limits_lists_every_registered_variable():
    listed = (REPO / "docs" / "limits.md").read_text(encoding="utf-8")
    assert [name for name in env_vars.registry() if f"| `{name}` |" not in listed] == []


def test_every_benchmark_has_its_metrics_variable_and_the_metric_tables_are_registered():
    from lmms_eval_unify.metrics import clip, dreamsim_metric, fid_fvd, lpips_metric
    from lmms_eval_unify.metrics.config import DEFAULT_BACKBONES, ENV_PREFIX

    short = [f"{family.upper()}_BACKBONE" for family in DEFAULT_BACKBONES]
    short += [clip.checkpoint_env_name(b) for b in ("ViT-L-14", "ViT-B-32", "ViT-H-14")]
    short += [env for _, env, _ in lpips_metric._TRUNKS.values()] + [env for env, _, _ in fid_fvd.CHECKPOINTS.values()]
    short += [dreamsim_metric._ENV_NAME, "ALLOW_DOWNLOADS"]
    for name in [ENV_PREFIX + s for s in short] + [env_vars.metrics_env(b) for b in BENCHMARKS]:
        variable(name)


def module_constants(path: Path) -> dict[str, str]:
    """The module-level string constants of ``path``."""
    constants = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            constants.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return constants


def package_modules() -> dict[str, Path]:
    """Every module of ours by its import name."""
    modules = {}
    for folder, package in PACKAGES.items():
        for p in (REPO / folder).rglob("*.py"):
            if "__pycache__" not in p.parts:
                modules[".".join((package, *p.relative_to(REPO / folder).with_suffix("").parts))] = p
    return modules


def environment_argument(node: ast.AST) -> ast.expr | None:
    """The name argument of an ``os.environ.get`` / ``os.getenv`` call or an ``os.environ[...]`` read."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.environ.get", "os.getenv"):
        return node.args[0] if node.args else None
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
        return node.slice
    return None


def variable_name(argument: ast.expr | None, known: dict[str, str]) -> str:
    """The variable an environment read names: a string literal or a known constant ("" otherwise)."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.Name):
        return known.get(argument.id, "")
    return ""


def direct_reads() -> dict[str, list[str]]:
    """Per module, the variables of ours it reads with ``os.environ`` / ``os.getenv`` (constants resolved, also
    those imported from another module of ours)."""
    modules = package_modules()
    constants = {name: module_constants(path) for name, path in modules.items()}
    found: dict[str, list[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        known = dict(constants[module])
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in constants:
                known.update({a.asname or a.name: constants[node.module].get(a.name, "") for a in node.names})
        for node in ast.walk(tree):
            value = variable_name(environment_argument(node), known)
            if value.startswith(env_vars.PREFIX):
                found.setdefault(str(path.relative_to(REPO)), []).append(value)
    return found


def test_no_module_reads_a_variable_of_ours_behind_the_registry():
    reads = direct_reads()
    assert set(reads) - READS_ITSELF - NOT_YET_MOVED == set(), f"read these with env_vars.read: {reads}"


# ---- commands refuse a malformed variable with exit 2 ------------------------------------------------------
def test_leaderboard_refuses_a_malformed_variable_with_exit_2(tmp_path, monkeypatch, capsys):
    write_run(tmp_path / "runs", "m", {"uni_mmmu_maze": [{"text_step_acc": 1.0}]})
    monkeypatch.setenv("LMMS_EVAL_UNIFY_LIMITS", '{"text_chars": -1}')
    assert cli.main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert "$LMMS_EVAL_UNIFY_LIMITS must give every limit as a positive integer" in err and "fix: " in err
    assert not (tmp_path / "board").exists()


@pytest.mark.subprocess
def test_score_refuses_a_malformed_limits_variable_with_exit_2(tmp_path):
    """It gave a traceback, exit 0 and '0 task(s) scored, 0 failed', which CI read as success."""
    write_run(tmp_path / "run", "m", {"uni_mmmu_maze": [{"text_step_acc": 1.0}]})
    env = {**os.environ, "LMMS_EVAL_UNIFY_LIMITS": "{text_chars: 5}"}
    done = subprocess.run(
        [str(BIN / "lmms-eval-unify"), "score", str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "$LMMS_EVAL_UNIFY_LIMITS is not JSON" in done.stderr
    assert not (tmp_path / "run" / "scored").exists()
