"""Real `lmms-eval` CLI runs of the baselines on generated data, judged by the local reference judge server."""

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from lmms_eval_unify.testing.openai_server import OpenAICompatServer

BIN = Path(sys.executable).parent


def offline_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of an offline run reading generated data from ``data_dir``."""
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", **extra}  # fmt: skip
    env.pop("LMMS_EVAL_UNIFY_OUTPUT_DIR", None)
    env.pop("LMMS_EVAL_UNIFY_MEDIA_ROOTS", None)  # a real run trusts only its own media roots
    return env


def judged_cli_runs(
    root: Path, tasks: str, verdict: Callable, env: Mapping[str, str], models: Mapping[str, list[str]]
) -> dict[str, Path]:
    """Run ``lmms-eval`` for each model (with its extra arguments) on ``tasks``, judged by a local server
    answering with ``verdict``; return each model's output folder. Fails on a non-zero exit or if the
    judge was never asked."""
    out = {}
    with OpenAICompatServer(verdict, max_lifetime_s=900) as judge_server:
        env = {**env, "LMMS_EVAL_UNIFY_JUDGE_BASE_URL": judge_server.base_url,
               "LMMS_EVAL_UNIFY_JUDGE_CACHE": str(root / "judge.sqlite")}  # fmt: skip
        for model, extra in models.items():
            out[model] = root / model
            command = [str(BIN / "lmms-eval"), "--model", model, "--tasks", tasks,
                       "--output_path", str(out[model]), "--log_samples", *extra]  # fmt: skip
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        assert judge_server.request_count > 0
    return out


def results_of(run: Path) -> dict:
    """The ``results`` mapping of a run's results JSON."""
    return json.loads(next(run.rglob("*_results.json")).read_text())["results"]


def samples_of(run: Path, task: str) -> list[dict]:
    """The logged samples of one task of a run."""
    return [json.loads(line) for line in next(run.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines()]


PLUGIN_MODEL = """
from lmms_eval.api.model import lmms


class {class_name}(lmms):
    is_simple = True

    def __init__(self, **kwargs):
        super().__init__()

    def generate_until(self, requests):
        return [{answer} for _ in requests]

    def generate_visual_cot(self, requests):
        return self.generate_until(requests)

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate_until_multi_round(self, requests):
        raise NotImplementedError


def manifests():
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id="{module}", simple_class_path="{module}.{class_name}")]
"""


def write_model_plugin(root: Path, module: str, class_name: str, answer: str) -> Path:
    """A plain lmms-eval model plugin in ``root`` (for ``PYTHONPATH``): ``module.py`` whose model, registered as
    ``--model <module>`` through a dist-info's ``lmms_eval.models`` entry point, takes any model argument and
    answers every request with the Python expression ``answer``."""
    root.mkdir()
    source = PLUGIN_MODEL.format(module=module, class_name=class_name, answer=answer)
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[lmms_eval.models]\n{module} = {module}:manifests\n", encoding="utf-8")
    return root
