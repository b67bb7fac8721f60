"""``lmms-eval-unify judge estimate``: judge calls and estimated tokens per task, computed before any request is
sent, and equal to the calls a real run then makes (judged tasks of the three judged benchmarks on generated data)."""

from __future__ import annotations

import math
import subprocess
from importlib.util import find_spec
from pathlib import Path

import pytest
from cli_runs import BIN, offline_env, samples_of

from lmms_eval_unify.benchmarks import BENCHMARKS, judge_prompt_files, part
from lmms_eval_unify.commands.judge import estimate_tasks, judged_tasks, main
from lmms_eval_unify.judges import get_template
from lmms_eval_unify.judges.estimate import (
    IMAGE_TOKENS,
    REPLY_TOKENS,
    JudgeCost,
    PlannedJudgement,
    judgement_cost,
    task_estimate,
    text_tokens,
)
from lmms_eval_unify.judges.reference import reference_verdict
from lmms_eval_unify.run.paths import DATA_DIR_ENV
from lmms_eval_unify.testing.openai_server import OpenAICompatServer

N_ITEMS = 3
JUDGED_BENCHMARKS = ("gapeval", "uni_mmmu", "unig2u")
RUN_TASKS = ("gapeval_reasoning_und", "gapeval_reasoning_gen", "uni_mmmu_geometry", "uni_mmmu_science",
             "uni_mmmu_code", "unig2u_geometry", "unig2u_light_gta")  # fmt: skip
"""Two-turn (GapEval understanding), image (GapEval generation), two judgements (Uni-MMMU), text only (UniG2U)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("judge_estimate") / "data"
    for benchmark in JUDGED_BENCHMARKS:
        part(benchmark, "offline.data").generate(root, N_ITEMS, seed=5)
    return root


@pytest.fixture
def offline(data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process reads the generated data, as a run started with :func:`offline_env` does."""
    for name in (DATA_DIR_ENV, "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, offline_env(data)[name])
    return data


def test_a_two_turn_judgement_makes_two_calls_unless_its_config_says_one_turn():
    two = judgement_cost(PlannedJudgement("gapeval.und.reasoning", images=2))
    one = judgement_cost(PlannedJudgement("gapeval.und.reasoning", images=2, config={"two_turn": False}))
    followup = get_template("gapeval.und.reasoning").followup or ""
    assert (two.judgements, two.calls, one.judgements, one.calls) == (1, 2, 1, 1)
    assert two.prompt_tokens == 2 * one.prompt_tokens + REPLY_TOKENS + text_tokens(len(followup))
    assert two.completion_tokens == 2 * REPLY_TOKENS and two.completion_bound is one.completion_bound is None


def test_images_cost_their_tokens_and_max_tokens_bound_the_replies():
    text = judgement_cost(PlannedJudgement("uni_mmmu.geometry.text"))
    assert text.completion_bound == get_template("uni_mmmu.geometry.text").max_tokens == 32767
    with_images = judgement_cost(PlannedJudgement("uni_mmmu.geometry.text", images=3))
    assert with_images.prompt_tokens - text.prompt_tokens == 3 * IMAGE_TOKENS
    capped = judgement_cost(PlannedJudgement("uni_mmmu.geometry.text", config={"max_tokens": 100}))
    assert capped.completion_bound == 100
    total = text + capped + JudgeCost()
    assert (total.calls, total.completion_bound) == (2, 32867)
    assert (total + judgement_cost(PlannedJudgement("gapeval.gen.reasoning", images=1))).completion_bound is None


def test_every_benchmark_with_judge_templates_plans_its_judgements():
    prompts = {entry.parent.name for entry in map(Path, map(str, judge_prompt_files()))}
    planned = {b for b in BENCHMARKS if find_spec(f"lmms_eval_unify.benchmarks.{b}.judge_plan") is not None}
    assert prompts == planned == set(JUDGED_BENCHMARKS)


def test_uni_mmmu_judgements_send_one_image_per_slot():
    plan = part("uni_mmmu", "judge_plan")
    assert set(plan.TEMPLATES) == {f"uni_mmmu_{name}" for name in part("uni_mmmu", "spec").JUDGED}
    planned = plan.planned_judgements("uni_mmmu_geometry", {}, {})
    assert [(p.template_id, p.images) for p in planned] == [
        ("uni_mmmu.geometry.image", 3),  # the base figure, the reference overlay and the generated image
        ("uni_mmmu.geometry.text", 0),
    ]


@pytest.mark.heavy
def test_groups_expand_and_limits_count_as_lmms_eval_counts(offline: Path):
    estimates, not_judged = estimate_tasks(["uni_mmmu", "unig2u_fine_discrim"], limit=0.5)
    assert [e.task for e in estimates] == ["uni_mmmu_geometry", "uni_mmmu_science", "uni_mmmu_code",
                                           "unig2u_fine_discrim"]  # fmt: skip
    assert sorted(not_judged) == ["uni_mmmu_jigsaw", "uni_mmmu_maze", "uni_mmmu_sliding"]
    samples = math.ceil(N_ITEMS * 0.5)  # lmms-eval's fractional --limit
    assert all(e.samples == samples for e in estimates)
    assert [e.cost.calls for e in estimates] == [2 * samples, 2 * samples, 2 * samples, samples]
    with pytest.raises(ValueError, match="unknown tasks or groups"):
        estimate_tasks(["uni_mmmu_nonexistent"])


@pytest.mark.heavy
def test_gapeval_repeats_are_rows_of_their_own(offline: Path):
    (task,), _ = judged_tasks(["gapeval_reasoning_und"])
    task.config.repeats = 4
    estimate = task_estimate(task, limit=10)
    assert (estimate.samples, estimate.cost.judgements, estimate.cost.calls) == (10, 10, 20)


@pytest.mark.heavy
def test_the_cli_prints_a_line_per_task_the_total_and_its_assumptions(offline: Path, capsys: pytest.CaptureFixture):
    assert main(["estimate", "--tasks", "gapeval_reasoning_und,uni_mmmu_jigsaw", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["task", "samples", "judgements", "calls"]
    assert lines[1].split()[:4] == ["gapeval_reasoning_und", "2", "2", "4"]
    assert lines[2].split()[:4] == ["total", "2", "2", "4"]
    assert "assume an empty judge cache" in lines[3] and "tokens are estimates" in lines[4]
    assert lines[5] == "# not judged (no judge calls): uni_mmmu_jigsaw"


def judged_calls(sample: object) -> int:
    """Calls the judge layer recorded in a logged sample: the replies of every judgement it did not read from
    its cache."""
    if isinstance(sample, dict):
        judgement = {"template_id", "replies", "cached"} <= set(sample)
        own = len(sample["replies"]) if judgement and not sample["cached"] else 0
        return own + sum(judged_calls(value) for value in sample.values())
    return sum(judged_calls(value) for value in sample) if isinstance(sample, list) else 0


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_estimated_calls_are_the_calls_a_run_makes(offline: Path, tmp_path: Path):
    estimates, _ = estimate_tasks(list(RUN_TASKS), limit=2)
    with OpenAICompatServer(reference_verdict, max_lifetime_s=600) as server:
        env = offline_env(
            offline,
            LMMS_EVAL_UNIFY_JUDGE_BASE_URL=server.base_url,
            LMMS_EVAL_UNIFY_JUDGE_CACHE=str(tmp_path / "judge.sqlite"),  # a new cache: every judgement is a call
            LMMS_EVAL_UNIFY_SKIP_PREFLIGHT="1",  # the preflight would ping the judge once more
        )
        command = [str(BIN / "lmms-eval"), "--model", "unify_oracle", "--tasks", ",".join(RUN_TASKS), "--limit", "2",
                   "--output_path", str(tmp_path / "run"), "--log_samples"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        received = server.request_count
    assert received == sum(e.cost.calls for e in estimates) == 22
    for estimate in estimates:
        samples = samples_of(tmp_path / "run", estimate.task)
        assert len(samples) == estimate.samples, estimate.task
        assert sum(judged_calls(sample) for sample in samples) == estimate.cost.calls, estimate.task
