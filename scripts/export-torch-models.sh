#!/usr/bin/env bash
# Exports the PyTorch models that are too large to check in (ResNet-18 has
# 45 MB of weights, MobileNetV2 9 MB, EfficientNet-B0 16 MB) into OUT/<name>
# (default build/models), with the export environment that scripts/setup.sh
# makes.
# A model is exported again only when the exporter, the model definitions or
# the export requirements changed since its last export.
#   scripts/export-torch-models.sh [OUT] [NAME...]
#   (names: resnet18 mobilenet_v2 shufflenet_v2_x0_5 efficientnet_b0)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/models}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(resnet18 mobilenet_v2 shufflenet_v2_x0_5 efficientnet_b0)
py=${COMET_EXPORT_PYTHON:-$root/.venv-export/bin/python}
if [ ! -x "$py" ]; then
  echo "error: $py not found: run scripts/setup.sh (it makes .venv-export)" >&2
  exit 1
fi
want=$(cat "$root/python/comet/export.py" "$root/python/comet/torch_models.py" \
  "$root/python/requirements-export.txt" | sha256sum | cut -d' ' -f1)
for n in "${names[@]}"; do
  stamp="$out/$n/.export.sha256"
  if [ -f "$out/$n/checkpoint" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "$n: up to date in $out/$n"
    continue
  fi
  rm -f "$stamp"
  PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONWARNINGS=ignore \
    "$py" -m comet.export --torch-models "$out" --only "$n"
  echo "$want" > "$stamp"
done
