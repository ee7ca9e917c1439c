#!/usr/bin/env bash
# Installs what COMET needs on Debian bookworm, idempotently: apt packages that
# are missing, a pinned Python virtual environment in .venv, and the export
# environment .venv-export (Debian's torch and torchvision, see
# python/requirements-export.txt).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

apt_pkgs=(
  cmake ninja-build g++ git
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  clang-22 libclang-rt-22-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  libdnnl-dev zlib1g-dev libgtest-dev libgmock-dev
  dataset-fashion-mnist
  python3-venv python3-dev python3-torch python3-torchvision
)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing: ${missing[*]}"
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${missing[@]}"
fi

# make_venv DIR REQUIREMENTS PYTHON [venv flags]: a venv with the pinned
# packages of REQUIREMENTS and the comet package (editable), refreshed only
# when that file changes.
make_venv() {
  local venv=$1 req=$2 python=$3
  shift 3
  local stamp="$venv/.requirements.sha256" want
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "[setup] creating Python environment in ${venv#$root/}"
    "$python" -m venv "$@" "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
    # Editable, without the extension comet._comet: COMET is not built yet;
    # comet/_native.py finds the one scripts/build.sh builds in build/.
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
      --config-settings=cmake.define.COMET_PYTHON_EXTENSION=OFF -e "$root/python"
    echo "$want" > "$stamp"
  fi
}

make_venv "$root/.venv" "$root/python/requirements.txt" python3
# The export environment: Debian's /usr/bin/python3, which python3-torch and
# python3-torchvision serve, with the pinned packages of
# requirements-export.txt on top.
make_venv "$root/.venv-export" "$root/python/requirements-export.txt" \
  /usr/bin/python3 --system-site-packages
