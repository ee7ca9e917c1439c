#!/usr/bin/env bash
# Quick-start demo (python -m comet.demo): prints
#  1. the whole-step peak memory of ResNet-18 (torchvision, 1-channel stem,
#     112x112, batch 64, AdamW) under PyTorch eager, PyTorch with
#     checkpointing, COMET --compress none and static, with the ratios to
#     eager and to checkpointing (comet.bench_peers);
#  2. the test accuracy of the LeNet fixture on Fashion-MNIST, one epoch with
#     the folder's AdamW, --compress none against static, paired by seed over
#     5 seeds: the mean change and its 95% Student-t interval
#     (comet.fidelity);
# and draws the first seed's loss curves and memory timelines. 3 to 5
# minutes on 2 cores.
#
#   scripts/demo-train.sh [STEPS] [comet.demo options]
#       STEPS: LeNet steps per run (default 937 = 1 epoch of batch 64)
#
# Uses build/ (or $COMET_BUILD_DIR) and .venv-export for PyTorch; writes the
# reports, tables and plot to ${COMET_DEMO_OUT:-out/demo}.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${COMET_BUILD_DIR:-$root/build}
train=$build/bin/comet-train
out=${COMET_DEMO_OUT:-$root/out/demo}
steps=${1:-937}
py=$root/.venv/bin/python
[ -x "$train" ] || { echo "demo-train: build first (scripts/build.sh): no $train" >&2; exit 1; }
# OpenMP threads that spin while waiting steal the other core on a busy
# 2-core machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" -m comet.demo --comet-train "$train" --out "$out" --steps "$steps" \
  "${@:2}"
