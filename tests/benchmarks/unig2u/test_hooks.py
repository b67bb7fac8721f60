"""The task YAMLs and hooks through the core protocols, in process (no CLI)."""

import datasets
import pytest
from conftest import ScriptedAdapter
from lmms_eval.api.instance import Instance
from lmms_eval.utils import load_yaml_config

from lmms_eval_unify.adapter import UNDERSTANDING_ONLY
from lmms_eval_unify.benchmarks.unig2u.offline.data import generate
from lmms_eval_unify.benchmarks.unig2u.spec import HUB_ROOT, SUBTASKS
from lmms_eval_unify.benchmarks.unig2u.task import concatenate, resolve_files
from lmms_eval_unify.run.paths import tasks_path
from lmms_eval_unify.scoring.scorer import metadata_params

pytestmark = pytest.mark.heavy  # the generated UniG2U set (module fixture)


class TextOnlyAdapter(ScriptedAdapter):
    capabilities = UNDERSTANDING_ONLY


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("unig2u_hooks")
    generate(root, 2, seed=2)
    return root


def _task(name: str, data_dir) -> tuple[dict, list[dict]]:
    config = load_yaml_config(str(tasks_path() / "unig2u" / f"{name}.yaml"))
    subtask = SUBTASKS[name.removeprefix("unig2u_").removesuffix("_official").removesuffix("_gta")]
    paths = resolve_files([HUB_ROOT + f for f in subtask.files], str(data_dir))
    parts = [datasets.load_dataset("parquet", data_files={"x": p}, split="x") for p in paths]
    docs = list(parts[0] if len(parts) == 1 else concatenate(parts, ["gmap", "collision"]))
    return config, docs


def _serve(model, config: dict, docs: list[dict], doc_id: int) -> dict:
    prompt = config["doc_to_text"](docs[doc_id], config["lmms_eval_specific_kwargs"]["default"])
    request = Instance(
        request_type="generate_until",
        arguments=(
            prompt,
            dict(config["generation_kwargs"]),
            config["doc_to_visual"],
            doc_id,
            config["task"],
            "s",
        ),
        idx=0,
        metadata={"task": config["task"], "doc_id": doc_id, "repeats": 1},
    )
    model.task_dict = {config["task"]: {"s": dict(enumerate(docs))}}
    [raw] = model.generate_until([request])
    params = metadata_params(config["process_results"], config["metadata"], config["task"])  # as UnifyTask
    return config["process_results"](docs[doc_id], [raw], **params)


def test_gta_stage1_gets_every_input_image_and_stage2_adds_the_generated_one(data_dir, tmp_path):
    config, docs = _task("unig2u_vsp_reason_gta", data_dir)
    collision = next(i for i, d in enumerate(docs) if d["source"] == "collision")
    truth = docs[collision]
    model = ScriptedAdapter([f"Car: {truth['gt_car']}\nPerson: {truth['gt_person'] + 0.5}"], output_dir=str(tmp_path))
    result = _serve(model, config, docs, collision)
    (generate_call, understand_call) = model.calls
    assert generate_call[0] == "generate_image" and generate_call[2] == 3  # icon, example, test map
    assert "analyzes the distances" in generate_call[1] and "[GEN_PROMPT]" not in understand_call[1]
    assert understand_call[2] == 4  # the three inputs + the generated image
    assert result["acc"] == 1.0 and result["details"]["generated_images"]


def test_official_gta_gives_stage1_only_the_first_image(data_dir, tmp_path):
    config, docs = _task("unig2u_vsp_reason_gta_official", data_dir)
    collision = next(i for i, d in enumerate(docs) if d["source"] == "collision")
    truth = docs[collision]
    model = ScriptedAdapter([f"Car: {truth['gt_car']}\nPerson: {truth['gt_person']}"], output_dir=str(tmp_path))
    result = _serve(model, config, docs, collision)
    (generate_call, understand_call) = model.calls
    assert generate_call[2] == 1 and understand_call[2] == 4  # released code: first input only in stage 1
    assert result["acc"] == 1.0


def _comparable(value):
    """Hooks by module file and name (each YAML load imports utils.py afresh)."""
    return (getattr(value, "__module__", None), value.__qualname__) if callable(value) else value


def test_direct_and_gta_pairs_differ_only_in_protocol_and_prompt():
    for name in SUBTASKS:
        direct = load_yaml_config(str(tasks_path() / "unig2u" / f"unig2u_{name}.yaml"))
        gta = load_yaml_config(str(tasks_path() / "unig2u" / f"unig2u_{name}_gta.yaml"))
        differing = {k for k in direct.keys() | gta.keys() if _comparable(direct.get(k)) != _comparable(gta.get(k))}
        assert differing <= {"task", "generation_kwargs", "lmms_eval_specific_kwargs"}, (name, differing)
        same_options = {k: v for k, v in direct["generation_kwargs"].items() if k not in ("protocol", "max_new_tokens")}
        assert same_options.items() <= gta["generation_kwargs"].items(), name


def test_a_model_that_cannot_generate_images_gets_a_dash_on_gta(data_dir, tmp_path):
    config, docs = _task("unig2u_chartqa_gta", data_dir)
    result = _serve(TextOnlyAdapter([], output_dir=str(tmp_path)), config, docs, 0)
    assert result["acc"] is None and result["invalid_outputs"] == ""
    direct, docs = _task("unig2u_chartqa", data_dir)
    answered = _serve(TextOnlyAdapter([docs[1]["answer"]], output_dir=str(tmp_path)), direct, docs, 1)
    assert answered["acc"] == 1.0
