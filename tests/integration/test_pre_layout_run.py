"""Issue 23's promise: the layout move changed no behaviour.

``pre_layout_run/`` is an lmms-eval run saved with the tree before the move (commit 6609159: ``unify_random`` on
generated Uni-MMMU maze/sliding and MME-Unify SIPU/MITIU sets, ``--n 3``); ``pre_layout_flags.json`` lists the
flags every ``lmms-eval-unify`` command showed in its ``--help`` then. Re-scoring the saved run with today's code
must give the same results, task by task and sample by sample, and every flag must still be there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval_unify.cli import main as cli_main

HERE = Path(__file__).parent
SAVED_RUN = HERE / "pre_layout_run"
PRE_LAYOUT_FLAGS = json.loads((HERE / "pre_layout_flags.json").read_text(encoding="utf-8"))
TOOL = Path(sys.executable).parent / "lmms-eval-unify"


def _results(folder: Path) -> dict:
    (path,) = folder.rglob("*_results.json")
    return json.loads(path.read_text(encoding="utf-8"))["results"]


def _sample_scores(folder: Path) -> dict[tuple[str, int], dict]:
    """(task, doc_id) -> the sample's metric values and scoring details (what process_results returned)."""
    scores = {}
    for path in folder.rglob("*_samples_*.jsonl"):
        task = path.stem.split("_samples_", 1)[1]
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            metrics = row.get("metrics") or [k for k in row if k in ("acc", "invalid_outputs") or k.endswith("_acc")]
            scores[task, row["doc_id"]] = {k: row[k] for k in [*metrics, "details"] if k in row}
    return scores


@pytest.mark.slow
def test_a_run_saved_before_the_move_rescores_to_identical_results(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAVED_RUN, run)
    data = tmp_path / "data"
    assert cli_main(["data", "generate", "uni_mmmu", "mme_unify", "--out", str(data), "--n", "3"]) == 0
    env = {**os.environ, "LMMS_EVAL_UNIFY_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([str(TOOL), "score", str(run)], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "12 sample(s) served from saved records" in done.stderr  # the saved outputs, not new ones
    before, after = _results(SAVED_RUN), _results(run / "scored")
    for task, metrics in before.items():
        assert {k: after[task][k] for k in metrics if k != "alias"} == {
            k: v for k, v in metrics.items() if k != "alias"
        }, task
    assert _sample_scores(run / "scored") == _sample_scores(SAVED_RUN)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", sorted(PRE_LAYOUT_FLAGS))
def test_every_command_keeps_its_flags(command):
    shown = subprocess.run([str(TOOL), *command.split(), "--help"], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    flags = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", shown.stdout))
    assert not set(PRE_LAYOUT_FLAGS[command]) - flags, f"{command} lost {set(PRE_LAYOUT_FLAGS[command]) - flags}"
