"""The registry's metric backbones (``benchmarks.metric_families``, which the leaderboard's tiny-metrics mark
asks) are those every task YAML declares for the run preflight (``metadata.metric_families``)."""

from __future__ import annotations

from lmms_eval.utils import load_yaml_config

from lmms_eval_unify.benchmarks import BENCHMARKS, metric_families
from lmms_eval_unify.run.paths import tasks_path


def test_every_tasks_metric_backbones_are_the_registrys():
    declared = {}
    for benchmark in BENCHMARKS:
        for path in sorted(tasks_path().joinpath(benchmark).glob("*.yaml")):
            config = load_yaml_config(str(path), mode="full")
            if isinstance(config.get("task"), str):
                declared[config["task"]] = tuple((config.get("metadata") or {}).get("metric_families") or ())
    assert len(declared) > 100 and any(declared.values())
    assert {task: metric_families(task) for task in declared} == declared
