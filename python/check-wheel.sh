#!/usr/bin/env bash
# usage: check-wheel.sh PYTHON BUILD_DIR WORK_DIR SRC_ROOT
# `pip wheel ./python` against this build's CMake package (Comet_DIR), the
# wheel installed into a scratch folder, and a LeNet step through
# comet.training.api from there: the extension must be the wheel's.
set -euo pipefail
py=$1 build=$2 work=$3 root=$4
rm -rf "$work"
mkdir -p "$work/wheel"
launcher=()
command -v ccache >/dev/null && launcher=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
"$py" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  -w "$work/wheel" -C cmake.define.Comet_DIR="$build" "${launcher[@]}" \
  "$root/python" > "$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; exit 1; }
"$py" -m pip install -q --disable-pip-version-check --no-deps \
  --target "$work/site" "$work"/wheel/comet-*.whl
cd "$work"
# -S: no site hooks, so an editable install of comet in PYTHON's environment
# (scripts/setup.sh makes one, a meta-path finder that outranks PYTHONPATH)
# cannot shadow the wheel; its site-packages comes back behind the wheel's
# folder for numpy.
purelib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
env -u COMET_BUILD_DIR PYTHONPATH="$work/site:$purelib" "$py" -S - "$work/site" "$root" <<'PY'
import sys
import numpy as np
import comet.training.api as api

site, root = sys.argv[1], sys.argv[2]
assert api._C.__file__.startswith(site), api._C.__file__
d = f"{root}/test/fixtures/models/lenet"
state = api.CheckpointState.load_checkpoint(f"{d}/checkpoint")
module = api.Module(f"{d}/training_model.onnx", state)
optimizer = api.Optimizer(f"{d}/optimizer_model.onnx", module)
x = np.random.default_rng(0).random((8, 1, 28, 28), dtype=np.float32)
y = np.arange(8, dtype=np.int64)
losses = []
for _ in range(5):
    losses.append(float(module(x, y)))
    optimizer.step()
    module.lazy_reset_grad()
print("wheel", api._C.__file__, "losses", losses)
assert losses[-1] < losses[0], losses
PY
