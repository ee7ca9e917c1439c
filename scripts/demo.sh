#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the main job
# (scripts/demo-train.sh): the peak memory of ResNet-18 training under
# PyTorch eager, PyTorch with checkpointing and COMET, and the accuracy of
# compressed against uncompressed training as a paired mean over seeds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
exec "$root/scripts/demo-train.sh" "$@"
