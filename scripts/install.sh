#!/usr/bin/env bash
# Create .venv (Python 3.11) and install lmms-eval-unify with its test tools, at the versions CI tests
# (constraints.txt). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -c constraints.txt torch torchvision
.venv/bin/python -m pip install -q -c constraints.txt -e '.[test]'
