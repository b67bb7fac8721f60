"""Task YAMLs agree with the benchmark specs: the UniG2U YAMLs are exactly what their generator writes
(lmms-eval's shallow include merge would make hand-written ones restate most keys), the hand-written
MME-Unify group YAMLs list the subtasks of ``spec.DOMAINS``, and a task includes only templates of its own
benchmark or the shared puzzle tasks (``tasks/puzzles``), never another benchmark's YAMLs."""

import importlib.util

import yaml

from lmms_eval_unify.benchmarks.mme_unify import spec as mme
from lmms_eval_unify.run.paths import tasks_path


def test_committed_unig2u_yamls_equal_the_generator_output():
    folder = tasks_path() / "unig2u"
    spec = importlib.util.spec_from_file_location("_make_unig2u", folder / "_make_yamls.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    expected = generator.task_files()
    committed = {path.name: path.read_text() for path in folder.glob("unig2u*.yaml")}
    assert sorted(committed) == sorted(expected)
    assert [name for name in expected if committed[name] != expected[name]] == []


def test_mme_unify_groups_list_the_spec_subtasks():
    folder = tasks_path() / "mme_unify"

    def members(group: str) -> list[str]:
        return yaml.safe_load((folder / f"{group}.yaml").read_text())["task"]

    for domain, subtasks in mme.DOMAINS.items():
        assert members(f"mme_unify_{domain}") == [mme.task_name(s) for s in subtasks]
    assert members("mme_unify") == [f"mme_unify_{d}" for d in mme.DOMAINS]
    official = ["mme_unify_understanding", *(mme.task_name(s, "official") for s in mme.HAS_OFFICIAL)]
    assert members("mme_unify_official") == official
    tasks = {path.stem for path in folder.glob("mme_unify_*.yaml")} - {
        "mme_unify_official",
        *(f"mme_unify_{d}" for d in mme.DOMAINS),
    }
    variants = {mme.task_name(s, v) for s in mme.SUBTASKS for v in ("corrected", "official")}
    assert tasks == variants


def test_task_yamls_include_only_their_own_templates_or_the_shared_puzzle_tasks():
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda load, node: load.construct_scalar(node))
    root = tasks_path()
    shared = []
    for path in sorted(root.glob("*/*.yaml")):
        include = yaml.load(path.read_text(), Loader=loader).get("include") or []
        for name in [include] if isinstance(include, str) else include:
            template = (path.parent / name).resolve()
            assert template.is_file(), f"{path.name} includes a missing {name}"
            assert template.parent in (path.parent, root / "puzzles"), f"{path.name} includes {name}"
            if template.parent == root / "puzzles":
                shared.append(path.relative_to(root).as_posix())
    puzzles = ("maze", "sliding", "jigsaw")
    assert sorted(shared) == sorted(
        [f"uni_mmmu/uni_mmmu_{name}.yaml" for name in puzzles]
        + [f"unig2u/unig2u_{name}{mode}.yaml" for name in puzzles for mode in ("", "_gta")]
    )
