#!/usr/bin/env bash
# Create .venv (Python 3.11) and install lmms-eval-unify with its test tools. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch 2.14.1 with torchvision 0.29.1: the pair that imports together on the project machines (other pairs break torchvision there).
.venv/bin/python -m pip install -q torch==2.14.1 torchvision==0.29.1
.venv/bin/python -m pip install -q -e '.[test]'
