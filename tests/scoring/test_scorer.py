"""The scorer wrapper: one place for unsupported / failed outputs, the judge log and metadata parameters;
every task YAML's metric_list is produced by the scorer it names; scorer modules import no torch."""

import subprocess
import sys
from pathlib import Path

import pytest
from lmms_eval.utils import load_yaml_config

from lmms_eval_unify.judges import JudgeResult
from lmms_eval_unify.output.record import OutputFailure, UnifiedOutput
from lmms_eval_unify.scoring.scorer import Score, metadata_params, scorer, scorer_spec

TASKS = Path(__file__).resolve().parents[2] / "tasks"
SCORER_MODULES = [
    "lmms_eval_unify.benchmarks.gapeval.scoring",
    "lmms_eval_unify.benchmarks.mme_unify.scoring",
    "lmms_eval_unify.benchmarks.mme_unify.generation",
    "lmms_eval_unify.benchmarks.unig2u.scoring",
    *(f"lmms_eval_unify.benchmarks.uni_mmmu.{m}" for m in ("scoring", "jigsaw", "geometry", "science", "code")),
]
CONVERTED = ("gapeval", "mme_unify", "unig2u", "uni_mmmu")


@scorer("acc", "steps", failed=lambda doc, **params: {"acc": 0.0, "steps": doc["n"]})
def count_words(doc, parsed, *, scale=1, strict):
    if parsed.text == "bad image":
        return OutputFailure("corrupt_image", "unreadable")
    return Score({"acc": scale * float(parsed.text == doc["answer"]), "steps": doc["n"]}, details={"s": strict})


def test_a_good_output_is_scored_and_its_images_are_listed(tmp_path):
    out = UnifiedOutput("direct", text="yes", images=["a.png"], root=str(tmp_path)).to_json()
    row = count_words({"answer": "yes", "n": 3}, [out], scale=2, strict=True)
    assert row == {"acc": 2.0, "steps": 3, "invalid_outputs": "",
                   "details": {"s": True, "generated_images": ["a.png"]}}  # fmt: skip


def test_unsupported_is_none_and_failures_take_the_scorers_failure_values():
    unsupported = UnifiedOutput("direct", unsupported="lacks understand").to_json()
    assert count_words({"n": 3}, [unsupported], strict=True) == {
        "acc": None, "steps": None, "invalid_outputs": "", "details": {"unsupported": "lacks understand"}
    }  # fmt: skip
    error = UnifiedOutput("direct", error="OOM").to_json()
    row = count_words({"n": 3}, [error], strict=True)
    assert (row["acc"], row["steps"], row["invalid_outputs"]) == (0.0, 3, "model_error")
    bad = count_words({"n": 4}, [UnifiedOutput("direct", text="bad image").to_json()], strict=True)
    assert bad == {
        "acc": 0.0,
        "steps": 4,
        "invalid_outputs": "corrupt_image",
        "details": {"failure": "unreadable"},
    }
    assert count_words({"n": 1}, [], strict=True)["invalid_outputs"] == "not_a_string"


def verdict(status: str, score: int | None = None) -> JudgeResult:
    fields = {} if score is None else {"score": score}
    return JudgeResult("t.x", 1, "judge-model", status, fields, "reply", None, False)


def test_the_judge_log_is_attached_once_with_the_raw_reply_only_when_unusable():
    @scorer("correct")
    def judged(doc, parsed):
        return Score.judged(verdict(doc["status"], doc.get("score")), "score", "correct", note=1)

    text = [UnifiedOutput("direct", text="x").to_json()]
    ok = judged({"status": "ok", "score": 1}, text)
    assert ok["correct"] == 1.0 and ok["invalid_outputs"] == "" and ok["details"]["note"] == 1
    assert ok["details"]["judge"]["template_id"] == "t.x" and ok["details"]["judge"]["raw"] is None
    invalid = judged({"status": "judge_invalid"}, text)
    assert invalid["correct"] == 0.0 and invalid["invalid_outputs"] == "judge_invalid"
    assert invalid["details"]["judge"]["raw"] == "reply"


def test_metadata_binds_the_scorers_keyword_parameters():
    assert scorer_spec(count_words).metrics == ("acc", "steps")
    params = metadata_params(count_words, {"version": 1, "strict": False, "scale": 3}, "t")
    assert params == {"strict": False, "scale": 3}
    with pytest.raises(ValueError, match="t: its scorer .*count_words needs metadata strict"):
        metadata_params(count_words, {"scale": 3}, "t")


def task_configs():
    for path in sorted(TASKS.glob("*/*.yaml")):
        if path.parent.name in CONVERTED:
            config = load_yaml_config(str(path), mode="full")
            if "task" in config and not isinstance(config["task"], list):
                yield pytest.param(config, id=path.stem)


@pytest.mark.parametrize("config", task_configs())
def test_every_task_names_its_scorer_and_every_metric_is_produced(config):
    spec = scorer_spec(config["process_results"])
    assert spec is not None, f"{config['task']}: process_results is not a scorer"
    params = metadata_params(config["process_results"], config["metadata"], config["task"])
    listed = {m["metric"] for m in config["metric_list"]}
    assert listed == {*spec.metric_names(params), "invalid_outputs"}
    # The paper roll-up is named once, by the benchmark's registry entry (tests/reports/test_leaderboard.py).
    assert "paper_score" not in config["metadata"]


@pytest.mark.subprocess
@pytest.mark.parametrize("module", SCORER_MODULES)
def test_importing_a_scorer_module_does_not_import_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
