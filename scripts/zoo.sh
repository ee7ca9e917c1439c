#!/usr/bin/env bash
# The torchvision zoo sweep (python/comet/zoo.py): every torchvision
# classification model with a 1-channel stem, exported, imported and trained
# for three steps; the table goes into docs/models.md.  Hours on 2 cores.
#
#   scripts/zoo.sh --docs docs/models.md   # the whole sweep and the table
#   scripts/zoo.sh --only resnet18,vgg11 --out out/zoo-try
#   scripts/zoo.sh --resume ...            # go on from an interrupted run
#
# Runs in the export environment ($COMET_EXPORT_PYTHON, default
# .venv-export/bin/python, made by scripts/setup.sh) with build/ (or
# $COMET_BUILD_DIR); writes out/zoo/zoo.json (per-model logs beside it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${COMET_EXPORT_PYTHON:-$root/.venv-export/bin/python}
[ -x "$py" ] || { echo "zoo: $py not found: run scripts/setup.sh (it makes .venv-export)" >&2; exit 1; }
export COMET_BUILD_DIR=${COMET_BUILD_DIR:-$root/build}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONWARNINGS=ignore
exec "$py" -m comet.zoo "$@"
