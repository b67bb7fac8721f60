"""The GapEval task class built from our real YAMLs: judge required up front, metadata.judge overrides,
repeats as per-repeat rows with their own doc ids."""

from pathlib import Path

import pytest
from lmms_eval.utils import load_yaml_config

from lmms_eval_unify.benchmarks.gapeval.offline.data import generate
from lmms_eval_unify.benchmarks.gapeval.task import GapEvalTask
from lmms_eval_unify.judges import JudgeNotConfiguredError

TASKS = Path(__file__).resolve().parents[3] / "tasks" / "gapeval"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("gapeval_task")
    generate(root, 3, seed=2)
    return root


def build(name: str, **overrides) -> GapEvalTask:
    config = load_yaml_config(str(TASKS / f"{name}.yaml"))
    return GapEvalTask(config={**config, **overrides})


@pytest.fixture
def env(data_dir, monkeypatch):
    monkeypatch.setenv("LMMS_EVAL_UNIFY_DATA_DIR", str(data_dir))
    monkeypatch.setenv("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")


def test_a_task_refuses_to_start_without_a_judge(env, monkeypatch):
    for name in ("LMMS_EVAL_UNIFY_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_EVAL_UNIFY_JUDGE_BASE_URL"):
        build("gapeval_reasoning_und")


def test_metadata_judge_overrides_reach_process_results(env):
    plain = build("gapeval_reasoning_und")
    assert not hasattr(plain.config.process_results, "keywords")
    metadata = {**plain.config.metadata, "judge": {"two_turn": False}}
    single = build("gapeval_reasoning_und", metadata=metadata)
    assert single.config.process_results.keywords == {"judge": {"two_turn": False}}
    with pytest.raises(ValueError, match="unknown judge config keys"):
        build("gapeval_reasoning_und", metadata={**metadata, "judge": {"turns": 1}})


def test_repeats_become_rows_with_their_own_doc_ids(env):
    task = build("gapeval_world_knowledge_gen", repeats=3)
    task.build_all_requests(limit=None, rank=0, world_size=1)
    assert task.config.repeats == 1  # lmms-eval itself sends each row once
    docs = task.dataset["test"]
    assert docs["repeat"] == [0, 1, 2] * 3
    assert docs["id"] == [f"world_knowledge_{q:04d}" for q in range(3) for _ in range(3)]
    assert [i.args[3] for i in task.instances] == list(range(9))
    assert task.instances[0].args[0] == docs[0]["gen_prompt"] and task.instances[0].repeats == 1
    assert task.instances[0].args[1]["protocol"] == "image_only"
    single = build("gapeval_world_knowledge_und")
    single.build_all_requests(limit=None, rank=0, world_size=1)
    assert len(single.instances) == 3 and "repeat" not in single.dataset["test"].column_names
