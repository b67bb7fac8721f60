"""Write the UniG2U task and group YAMLs from the subtask table (run: python tasks/unig2u/_make_yamls.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from lmms_eval_unify.benchmarks.unig2u.spec import (
    CATEGORY_GROUPS,
    HUB_ROOT,
    JUDGED,
    MODES,
    SUBTASKS,
    task_name,
)

HERE = Path(__file__).parent
BENCH = "lmms_eval_unify.benchmarks.unig2u"
SPACES = f"{BENCH}.spaces"
# family -> (doc_to_visual hook, scorer, answer space, max_new_tokens Direct, GtA)
FAMILIES = {
    "realunify": ("image_doc_to_visual", "score_answer", "MULTIPLE_CHOICE", 1024, 1024),
    "vsp": ("vsp_doc_to_visual", "score_answer", "VSP", 1024, 1024),
    "chartqa": ("image_doc_to_visual", "score_answer", "CHARTQA", 16, 16),
    "mmsi": ("images_doc_to_visual", "score_answer", "MMSI", 2048, 2048),
    "visual_puzzles": ("image_doc_to_visual", "score_answer", "MULTIPLE_CHOICE", 4096, 512),
    "geometry3k": ("geometry3k_doc_to_visual", "score_judged", "GEOMETRY", 16384, 16384),
    "auxsolidmath": ("auxsolidmath_doc_to_visual", "score_judged", "GEOMETRY", 16384, 16384),
    "phyx": ("phyx_doc_to_visual", "score_judged", "PHYX", 1024, 1024),
    "babyvision": ("image_doc_to_visual", "score_judged", "BABYVISION", 4096, 4096),
    "illusion": ("image_doc_to_visual", "score_answer", None, 64, 64),
}
PUZZLE_FAMILIES = ("maze", "sliding", "jigsaw")
"""Subtasks that include a shared puzzle task template (``tasks/puzzles/_<name>_yaml``)."""


def scorer_version(judged: bool) -> float:
    """``metadata.version`` of a task or group (CHANGELOG.md, Scorer versions): 3.0 for the judged tasks and the
    groups holding one, since their samples record the judge template's digest; 2.0 for the others."""
    return 3.0 if judged else 2.0


class _Function(str):
    """A ``!function`` reference."""


yaml.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


MULTI_IMAGE_FAMILIES = ("vsp", "mmsi")
"""Subtasks with several input images: only there does the released code's first-image-only stage 1 differ."""


def puzzle_template(name: str) -> str:
    """The shared template of the ``name`` puzzle task, relative to this folder."""
    return f"../puzzles/_{name}_yaml"


def puzzle_generation(name: str) -> dict:
    """The ``generation_kwargs`` of the shared ``name`` puzzle template (its step protocol and prompts)."""
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda load, node: load.construct_scalar(node))
    text = (HERE / puzzle_template(name)).read_text()
    return dict(yaml.load(text, Loader=loader)["generation_kwargs"])


def task_config(name: str, mode: str) -> dict:
    subtask = SUBTASKS[name]
    gta = mode != "direct"
    config: dict = {"task": task_name(name, MODES[mode])}
    data_files = [HUB_ROOT + f for f in subtask.files]
    common = {
        "test_split": subtask.split,
        "dataset_kwargs": {"data_files": {subtask.split: data_files[0] if len(data_files) == 1 else data_files}},
    }
    if subtask.family in PUZZLE_FAMILIES:
        # The shared puzzle task is included first, so it wins over our template (the first include wins in
        # lmms-eval): its visuals, prompt, answer field and, in GtA, its step protocol. Our keys win over both.
        config["include"] = [puzzle_template(name), "_default_template_yaml"]
        config |= common | {"dataset_name": None}
        if subtask.family == "jigsaw":
            # The score is UniG2U's (text accuracy); the answer space reads UniG2U's fields.
            config["process_results"] = _Function(f"{BENCH}.scoring.score_jigsaw")
            protocol = (
                puzzle_generation(name) if gta else {"protocol": "direct", "max_new_tokens": 1024, "temperature": 0}
            )
            config["generation_kwargs"] = protocol | {"answer_space": f"{SPACES}:JIGSAW"}
        else:
            config["process_results"] = _Function(f"{BENCH}.scoring.score_move_puzzle")
            if not gta:
                config["generation_kwargs"] = {
                    "protocol": "direct",
                    "answer_space": f"lmms_eval_unify.puzzles.answer_space:{name.upper()}",
                    "max_new_tokens": 1024,
                    "temperature": 0,
                }
    else:
        visual, results, space, direct_tokens, gta_tokens = FAMILIES[subtask.family]
        space = space or name.upper()
        config["include"] = "_default_template_yaml"
        config |= common | {
            "doc_to_visual": _Function(f"{BENCH}.inputs.{visual}"),
            "process_results": _Function(f"{BENCH}.scoring.{results}"),
        }
        if subtask.doc_type:
            config["process_docs"] = _Function(f"{BENCH}.inputs.{name}_docs")
        config["generation_kwargs"] = {
            "protocol": "generate_then_answer" if gta else "direct",
            "answer_space": f"{SPACES}:{space}",
            "max_new_tokens": gta_tokens if gta else direct_tokens,
            "temperature": 0,
        }
        if mode == "gta_official":
            config["generation_kwargs"]["gen_inputs"] = "first"
        config["lmms_eval_specific_kwargs"] = {"default": {"subtask": name, "mode": "gta" if gta else mode}}
    config["metadata"] = {
        "version": scorer_version(name in JUDGED),
        "benchmark": "unig2u",
        "category": subtask.category,
        "subtask": name,
    }
    if name in JUDGED:
        config["metadata"]["judged"] = True
    return config


def group_config(name: str, subtasks: list[str], suffix: str) -> dict:
    """The group `name` of the given subtasks in the mode that `suffix` names."""
    tasks = [task_name(n, suffix) for n in subtasks]
    return {"group": name, "task": tasks, "metadata": {"version": scorer_version(any(n in JUDGED for n in subtasks))}}


HEADER = "# Generated by _make_yamls.py from lmms_eval_unify/benchmarks/unig2u/spec.py; edit those.\n"


def yaml_text(config: dict) -> str:
    text = yaml.dump(config, sort_keys=False, width=110, allow_unicode=True)
    return HEADER + re.sub(r"!function '([^']*)'", r"!function \1", text)


def task_files() -> dict[str, str]:
    """File name -> text of every UniG2U task and group YAML."""
    files = {}
    official = [n for n, s in SUBTASKS.items() if s.family in MULTI_IMAGE_FAMILIES]
    for mode, suffix in MODES.items():
        names = official if mode == "gta_official" else list(SUBTASKS)
        for name in names:
            config = task_config(name, mode)
            files[f"{config['task']}.yaml"] = yaml_text(config)
        if mode != "gta_official":
            for category in CATEGORY_GROUPS:
                members = [n for n in names if SUBTASKS[n].category == category]
                if members:
                    group = task_name(category, suffix)
                    files[f"{group}.yaml"] = yaml_text(group_config(group, members, suffix))
        group = f"unig2u{suffix}"
        files[f"{group}.yaml"] = yaml_text(group_config(group, names, suffix))
    return files


def main() -> None:
    for old in HERE.glob("unig2u*.yaml"):
        old.unlink()
    for name, text in task_files().items():
        (HERE / name).write_text(text)


if __name__ == "__main__":
    main()
