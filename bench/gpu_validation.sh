#!/usr/bin/env bash
# GPU validation for the first lent GPU (issue 30 item 6): one table, in under 8 minutes on one H100, of
#   - the batched-versus-single generation ratio (janus_pro, Janus-Pro-1B's shape with random weights),
#   - CLIP-I images/s (the papers' ViT-L/14 with random weights, module vs naive loop),
#   - each adapter's tiny-weight parity bench (qwen_image_edit on CUDA; the official-code ones when carried).
# bench/gpu_validation.py does the work; its docstring says more. docs/benchmarks.md points here.
#
# 1. Here, with PyPI (the device has no network): the wheels the device image lacks, into the git-ignored .whl/
#        .venv/bin/python bench/gpu_validation.py prepare
#    (optional, one model per call: --with-official show_o2 --official-root DIR, DIR/show_o2 or DIR/Show-o a checkout)
# 2. On the device, through the device tool:
#        run(command="bash bench/gpu_validation.sh", carry=[".whl"], timeout_s=540)
#    The table is printed and written to $OUT/gpu_validation.{md,json} with the steps' output in
#    $OUT/gpu_validation.log. Then give_back, unless you rerun at once.
# 3. Here, as a test (CPU, tiny sizes, a few minutes):
#        bash bench/gpu_validation.sh --device cpu --smoke --out /tmp/gpu_validation
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PYTHON=${PYTHON:-python3}
if [ -x .venv/bin/python ] && [ -z "${OUT:-}" ]; then PYTHON=.venv/bin/python; fi  # here; on the device: python3
exec "$PYTHON" bench/gpu_validation.py run --device cuda --out "${OUT:-gpu_validation_out}" "$@"
