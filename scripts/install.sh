#!/usr/bin/env bash
# Create .venv (Python 3.11) and install lmms-eval-unify with its test tools, at the versions CI tests
# (constraints.txt). Safe to re-run.
#
#   bash scripts/install.sh                  the evaluator (every benchmark, the baselines, the tests)
#   bash scripts/install.sh --model NAME     then also NAME's own environment for its official code
#                                            (show_o2, bagel, omnigen2; model_adapters/environments/NAME.txt),
#                                            in $LMMS_EVAL_UNIFY_MODEL_ENVS/NAME (default ~/.cache/lmms_eval_unify/envs)
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) [ $# -ge 2 ] || { echo "--model needs a name" >&2; exit 2; }; MODELS+=("$2"); shift 2 ;;
    *) echo "unknown argument $1 (use --model NAME)" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-python3.11}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c constraints.txt torch torchvision
.venv/bin/python -m pip install -q -c constraints.txt -e '.[test]'
for model in "${MODELS[@]+"${MODELS[@]}"}"; do
  .venv/bin/lmms-eval-unify env create "$model"
done
