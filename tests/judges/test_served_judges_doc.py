"""docs/judges.md's served judges: every ``vllm serve`` command line and the exports of its fenced blocks, parsed and
checked against the templates (flags we know vLLM has, the papers' judge models, image and context limits), then
applied to the judge layer against two local servers in vLLM's reply shape (what the client sends, verbatim)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lmms_eval_unify.benchmarks.uni_mmmu.judged import JUDGES_ENV, ask
from lmms_eval_unify.judges import JudgeConfig, load_templates, reset_judge_state
from lmms_eval_unify.judges import config as judge_config
from lmms_eval_unify.testing.openai_server import ChatRequest, OpenAICompatServer, ServedReply

DOC = Path(__file__).parents[2] / "docs" / "judges.md"
VLLM_SERVE_FLAGS = {
    "--served-model-name": "the model name the server answers to (default: the model argument)",
    "--tensor-parallel-size": "GPUs the weights are split over",
    "--dtype": "weight and activation dtype",
    "--max-model-len": "longest sequence (prompt + max_tokens) the server accepts",
    "--limit-mm-per-prompt": "most multimodal items per request, JSON",
    "--reasoning-parser": "returns a reasoning model's thinking apart from its answer",
    "--gpu-memory-utilization": "share of GPU memory vLLM takes",
    "--port": "HTTP port",
    "--host": "HTTP host",
}
"""The ``vllm serve`` flags the docs may use (all take a value): the ones checked in vLLM's documentation."""
ATTENTION_HEADS = {"Qwen/Qwen2.5-VL-72B-Instruct": 64, "Qwen/Qwen3-32B": 64}
"""Query heads of the served models (their config.json): the tensor-parallel size must divide them."""
PROMPT_ROOM = 8192
"""Tokens ``--max-model-len`` must leave for a prompt beside the largest ``max_tokens`` of the model's templates (the
prompt share of Qwen3's 40,960 in its model card)."""
REASONING_PARSERS = {"Qwen/Qwen3-32B": "qwen3"}
"""vLLM's reasoning parser of each thinking judge."""
EXPORTS = {value for name, value in vars(judge_config).items() if name.startswith("ENV_")} | {JUDGES_ENV}
"""The variables the judge layer reads."""


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def shell_lines(block: str) -> Iterator[list[str]]:
    """The commands of a fenced ``bash`` block, continuation lines joined, split as the shell does."""
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            yield words


def serve_commands() -> list[tuple[str, dict[str, str]]]:
    """``(model, {flag: value})`` of every ``vllm serve`` command of the doc (``VAR=value`` prefixes skipped)."""
    commands = []
    for words in (words for block in bash_blocks() for words in shell_lines(block)):
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]
        if words[:2] == ["vllm", "serve"]:
            model, rest = words[2], words[3:]
            assert len(rest) % 2 == 0 and all(flag in VLLM_SERVE_FLAGS for flag in rest[::2]), rest
            commands.append((model, dict(zip(rest[::2], rest[1::2], strict=True))))
    return commands


def served_judge_exports() -> dict[str, str]:
    """The exports of the block that starts the vLLM servers."""
    (block,) = [block for block in bash_blocks() if "vllm serve" in block]
    return dict(words[1].split("=", 1) for words in shell_lines(block) if words[0] == "export")


def uni_mmmu_templates() -> dict[str, object]:
    return {tid: t for tid, t in load_templates().items() if t.paper == "Uni-MMMU"}


def test_every_vllm_command_serves_a_papers_judge_within_its_templates_limits():
    commands = serve_commands()
    served = {flags.get("--served-model-name", model) for model, flags in commands}
    assert served == {t.default_model for t in uni_mmmu_templates().values()} == set(ATTENTION_HEADS)
    assert len({flags["--port"] for _, flags in commands}) == len(commands)
    for model, flags in commands:
        name = flags.get("--served-model-name", model)
        assert name == model, "the served name is the Hub id, so the cache and the templates' default model agree"
        templates = [t for t in load_templates().values() if t.default_model == name]
        assert ATTENTION_HEADS[name] % int(flags["--tensor-parallel-size"]) == 0
        assert int(flags["--max-model-len"]) >= max(t.max_tokens or 0 for t in templates) + PROMPT_ROOM
        slots = max(len(t.slots) for t in templates)
        if slots:
            assert json.loads(flags["--limit-mm-per-prompt"])["image"] >= slots
        assert flags.get("--reasoning-parser") == REASONING_PARSERS.get(name)


def test_the_exports_route_every_uni_mmmu_judgement_to_the_server_of_its_model():
    exported = served_judge_exports()
    assert set(exported) <= EXPORTS
    ports = {int(flags["--port"]): model for model, flags in serve_commands()}
    overrides = json.loads(exported[JUDGES_ENV])
    assert set(overrides) <= set(uni_mmmu_templates())
    for template_id, template in uni_mmmu_templates().items():
        override = JudgeConfig.coerce(overrides.get(template_id))
        url = override.base_url or exported[judge_config.ENV_BASE_URL]
        model = override.model or exported.get(judge_config.ENV_MODEL) or template.default_model
        assert model == template.default_model == ports[urlsplit(url).port], template_id


@pytest.fixture
def vllm_servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[int, OpenAICompatServer]]:
    """One local server per documented ``--port``, answering in vLLM's shape (a reasoning parser's separate
    thinking for Qwen3), with the documented exports applied, their URLs pointing at these servers."""
    verdicts = {"Qwen/Qwen3-32B": '{"reasoning_rigorous": 1, "conclusion_correct": 1, "text_ok": 1}'}

    def policy(request: ChatRequest) -> ServedReply:
        thinking = "The candidate's result matches." if request.model == "Qwen/Qwen3-32B" else None
        return ServedReply(verdicts.get(request.model, '{"reasoning_correct": 1, "result_correct": 1}'), thinking)

    exported = served_judge_exports()
    servers = {int(flags["--port"]): OpenAICompatServer(policy, api_key=exported[judge_config.ENV_API_KEY])
               for _, flags in serve_commands()}  # fmt: skip
    for server in servers.values():
        server.start()
    for name in EXPORTS | {"OPENAI_BASE_URL", "OPENAI_API_KEY"}:
        monkeypatch.delenv(name, raising=False)
    for name, value in exported.items():
        for port, server in servers.items():
            value = value.replace(f"http://localhost:{port}/v1", server.base_url)
        assert "localhost" not in value, f"{name} names a port no documented server listens on"
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(judge_config.ENV_CACHE, str(tmp_path / "judge.sqlite"))
    reset_judge_state()
    yield servers
    reset_judge_state()
    for server in servers.values():
        server.stop()


def test_the_judge_client_sends_the_documented_settings_verbatim(vllm_servers: dict[int, OpenAICompatServer]):
    overrides = json.loads(served_judge_exports()[JUDGES_ENV])
    problem = {"task_type": "CALCULATION", "problem": "p", "solution": "s", "response": "r"}
    geometry = ask("uni_mmmu.geometry.text", {"text_acc": "text_ok"}, "uni_mmmu_geometry", variables=problem)
    condition = {"condition": "c", "reference": "r", "response": "r"}
    science = ask("uni_mmmu.science.text", {"text_acc": "result_correct"}, "uni_mmmu_science", variables=condition)
    assert geometry.metrics == {"text_acc": 1.0} and science.metrics == {"text_acc": 1.0}
    by_model = {request.model: request for server in vllm_servers.values() for request in server.requests_to()}
    assert set(by_model) == {"Qwen/Qwen3-32B", "Qwen/Qwen2.5-VL-72B-Instruct"}
    thinking = by_model["Qwen/Qwen3-32B"].body
    documented = overrides["uni_mmmu.geometry.text"]["extra_body"]
    assert {key: thinking[key] for key in documented} == documented
    assert (thinking["max_tokens"], thinking["temperature"]) == (32767, 0.0)
    assert not set(documented) & set(by_model["Qwen/Qwen2.5-VL-72B-Instruct"].body)
