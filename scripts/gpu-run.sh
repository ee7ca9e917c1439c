#!/usr/bin/env bash
# The GPU run, in two halves (docs/cuda.md, "The GPU run"):
#
#   scripts/gpu-run.sh bundle [BUILD_DIR]
#       here, with LLVM/MLIR and the Python environments: writes gpu-bundle/
#       in the source tree (ignored by git, so that the device tool carries
#       it with `carry: ["gpu-bundle"]`), through scripts/aot-bundle.sh: the
#       compiled steps (the aot-bundle's three fixture steps and the four
#       exported models cnn, transformer, resnet18, mobilenet_v2, uncompressed,
#       AdamW), comet-run's CPU reports of them, oneDNN, zlib and GoogleTest
#       (xz-packed), a sample of the real activations by class for the codec
#       benchmark, the log of the models' CPU-against-ONNX-Runtime check,
#       and peers/: the bench-peers leg's steps (make_peers, below).
#
#   scripts/gpu-run.sh peers [BUILD_DIR]
#       only peers/, into an existing bundle.
#       Fails if the tree and the bundle together reach 64 MiB.
#
#   scripts/gpu-run.sh run [RESULTS_DIR]
#       on the GPU machine (no LLVM/MLIR needed: CMake, ninja, nvcc, cuDNN
#       and cuBLAS, python3 with numpy): builds the runtime-only tree
#       (runtime, CUDA backend, codec, their tests, comet-run) in build-gpu/,
#       then runs, in order, each leg writing into RESULTS_DIR (default
#       gpu-results/):
#         1 gpu-tests    ctest -L gpu (CUDA kernel suites, CUDA codec)
#         2 matches      every bundled step on --device cuda against
#                        --device cpu (test/gpu/cuda_matches_cpu.py, 1e-4),
#                        the cpu run against the bundle's report (1e-4), and
#                        the bundle's CPU-against-ORT log
#         3 codec-bench  comet.bench_codec_cuda on the bundled classes
#         4 bench-peers  COMET against PyTorch on the GPU, peaks by
#                        torch.cuda.max_memory_allocated
#                        (comet.bench_peers_cuda on the bundle's peers/)
#         5 profile      comet-run --device cuda under COMET_RT_PROFILE on
#                        the bench steps and the transformer's (per-entry
#                        times; a device fault names its entry)
#         6 sanitizer    compute-sanitizer memcheck and racecheck on the CUDA
#                        codec and kernel tests, memcheck on a transformer
#                        step (last: the slowest)
#       and summary.txt, one line per leg. Exits non-zero if a leg failed.
#       Without a CUDA device (a rehearsal) the legs that need one are
#       recorded as skipped and the others run.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle=${COMET_GPU_BUNDLE:-$root/gpu-bundle}
limit=$((64 * 1024 * 1024))
mode=${1:-}
shift || true

# The four exported models, uncompressed (the ORT comparison's setting),
# batch 8, AdamW from their folders.
models=(cnn transformer resnet18 mobilenet_v2)
model_flags="--data synthetic --seed 1 --synthetic-size 64 --max-steps 2 --lr 1e-4 --eval-samples 16 --quiet"

make_bundle() {
  set -e
  local build
  build=$(cd "${1:-$root/build}" && pwd)
  local export_py=${COMET_EXPORT_PYTHON:-$root/.venv-export/bin/python}
  local py=${COMET_PYTHON:-$root/.venv/bin/python}
  local torch_models=${COMET_TORCH_MODELS:-$build/models}
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  "$root/scripts/export-torch-models.sh" "$torch_models" resnet18 mobilenet_v2

  # resnet18's and mobilenet_v2's weights are most of their steps (45 MB and
  # 9 MB of f32 that xz cannot shrink): their steps are compiled with the
  # initial weights rounded to bfloat16 (kept in f32), whose low halves are
  # zero. The cuda-against-cpu comparison needs the same weights on both
  # sides, not these; the ORT check below runs the checkpoint's.
  local steps="" m dir weights
  for m in "${models[@]}"; do
    dir=$root/test/fixtures/models/$m
    [[ -f $dir/training_model.onnx ]] || dir=$torch_models/$m
    weights=""
    if [[ $m == resnet18 || $m == mobilenet_v2 ]]; then
      PYTHONPATH="$root/python" "$export_py" - "$dir/model.onnx" \
        "$work/$m-bf16.onnx" <<'PY'
import sys

import numpy as np
import onnx
from onnx import numpy_helper

m = onnx.load(sys.argv[1])
inits = []
for t in m.graph.initializer:
    a = numpy_helper.to_array(t)
    if a.dtype == np.float32:
        u = a.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16  # round to nearest even
        a = u.astype(np.uint32).view(np.float32)
    inits.append(numpy_helper.from_array(a, t.name))
g = onnx.helper.make_graph([], "weights", [], [], inits)
onnx.save(onnx.helper.make_model(g), sys.argv[2])
PY
      weights="--weights $work/$m-bf16.onnx"
    fi
    steps+="$m|$dir --compress none --batch 8 --optimizer $dir/optimizer_model.onnx $weights|$model_flags"$'\n'
  done

  rm -rf "$bundle"
  COMET_AOT_SRC=0 COMET_AOT_GTEST=1 COMET_AOT_PACK=1 COMET_AOT_STEPS="$steps" \
    "$root/scripts/aot-bundle.sh" "$build" "$bundle"

  # The codec benchmark's classes: a sample of the real activations.
  local real=$build/activations_real
  if [[ ! -d $real ]]; then
    PYTHONPATH="$root/python" COMET_BUILD_DIR="$build" "$export_py" -c '
import sys
from pathlib import Path
from comet.bench_codec import dump_real
dump_real(Path(sys.argv[1]), torch_models_dir=Path(sys.argv[2]))
' "$real" "$torch_models"
  fi
  PYTHONPATH="$root/python" "$export_py" -c '
import sys
from pathlib import Path
from comet.bench_codec import sample_classes
sample_classes(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]))
' "$real" "$work/activations" "${COMET_GPU_SAMPLE_MB:-2.5}"
  tar -cJf "$bundle/activations.tar.xz" -C "$work" activations

  # The CPU side of the 1e-4 match against ONNX Runtime, on the
  # checkpoints' weights (python/tests/test_torch_models_vs_ort.py).
  local k
  k=$(printf ' or %s' "${models[@]}")
  (cd "$root" && COMET_BUILD_DIR="$build" PYTHONPATH="$root/python" \
    OMP_WAIT_POLICY=passive "$py" -m pytest -v -rs \
    python/tests/test_torch_models_vs_ort.py -k "${k# or }") \
    >"$bundle/reference/ort-match.log" 2>&1 || {
    tail -20 "$bundle/reference/ort-match.log"
    echo "gpu-run: the CPU-against-ORT check failed" >&2
    return 1
  }
  tail -1 "$bundle/reference/ort-match.log"

  [[ ${COMET_GPU_PEERS:-1} == 0 ]] || make_peers "$build" "$torch_models" "$work"

  local tree size
  tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
  size=$(du -sb "$bundle" | cut -f1)
  printf 'carried: tree %d + bundle %d = %d bytes (limit %d)\n' \
    "$tree" "$size" $((tree + size)) "$limit"
  ((tree + size < limit)) || { echo "gpu-run: over 64 MiB" >&2; return 1; }
}

# The bench-peers leg's steps (comet.bench_peers_cuda): ResNet-18 at 224x224,
# batch 256, and the GPT decoder (bench_peers' size, batch 32), each
# compiled with --compress none and static, and peers.json (the workloads
# and their AdamW hyper-parameters). Their weights repeat each tensor's
# first 8191 initial values (a prime period: no two rows alike), so that
# xz packs a step into little: the memory and the time do not depend on
# the values.
make_peers() {
  local build=$1 torch_models=$2 work=$3
  local export_py=${COMET_EXPORT_PYTHON:-$root/.venv-export/bin/python}
  local out=$bundle/peers gpt_args=layers=6,d_model=384,heads=6,seq_len=512
  mkdir -p "$out"
  local entries="" spec name model how batch dir m
  for spec in "resnet18-224-b256|resnet18|--image-size 224|256|resnet18-224" \
    "gpt-seq512-b32|gpt|--model-args $gpt_args|32|gpt-seq512"; do
    IFS='|' read -r name model how batch dir <<<"$spec"
    dir=$torch_models/$dir
    if [[ ! -f $dir/training_model.onnx ]]; then
      # shellcheck disable=SC2086
      PYTHONPATH="$root/python" "$export_py" -m comet.export "$model" \
        --out "$dir" $how --optimizer adamw >"$work/export-$name.log" 2>&1 ||
        { tail -20 "$work/export-$name.log"; return 1; }
    fi
    PYTHONPATH="$root/python" "$export_py" - "$dir" "$work/$name-tiled.onnx" \
      "$name" "$model" "$batch" "$how" >"$work/$name.json" <<'PY'
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from comet.bench_peers import adamw_attributes

src, dst, name, model, batch, how = sys.argv[1:]
m = onnx.load(src + "/model.onnx")
inits = []
for t in m.graph.initializer:
    a = numpy_helper.to_array(t)
    if a.dtype == np.float32 and a.size > 8191:
        a = np.resize(a.reshape(-1)[:8191], a.size).reshape(a.shape)
    inits.append(numpy_helper.from_array(np.ascontiguousarray(a), t.name))
g = onnx.helper.make_graph([], "weights", [], [], inits)
onnx.save(onnx.helper.make_model(g), dst)
flag, value = how.split(" ", 1)
w = {"name": name, "model": model, "batch": int(batch),
     "optimizer": adamw_attributes(src),
     "steps": {r: f"{name}-{r.split('-')[1]}.so"
               for r in ("comet-none", "comet-static")}}
if flag == "--image-size":
    w["image_size"] = int(value)
else:
    w["model_args"] = value
    w["seq_len"] = int(dict(kv.split("=") for kv in value.split(","))["seq_len"])
print(json.dumps(w))
PY
    for m in none static; do
      "$build/bin/comet-compile" "$dir" --compress $m --batch "$batch" \
        --optimizer "$dir/optimizer_model.onnx" --weights "$work/$name-tiled.onnx" \
        --mcpu "${COMET_AOT_MCPU:-x86-64-v3}" -o "$out/$name-$m.so"
      xz -9 -T0 -f "$out/$name-$m.so"
    done
    entries+="${entries:+,}$(cat "$work/$name.json")"
  done
  echo "[$entries]" >"$out/peers.json"
  du -sb "$out"/* | awk '{printf "peers: %s %d bytes\n", $2, $1}'
}

# ---- the GPU machine ----------------------------------------------------------

results=""
# The bench-peers steps, unpacked once (bench-peers and profile run them);
# fails when the bundle has none.
unpack_peers() {
  [[ -f $bundle/peers/peers.json ]] || return 1
  local x
  for x in "$bundle"/peers/*.so.xz; do
    [[ -f $x ]] && xz -d -f "$x"
  done
  return 0
}
# COMET_GPU_LEGS: the legs to run after the build (default: all, in order).
legs=${COMET_GPU_LEGS:-gpu-tests,matches,codec-bench,bench-peers,profile,sanitizer}
want() { [[ ",$legs," == *",$1,"* ]]; }
summary() { printf '%-12s %-8s %s\n' "$1" "$2" "$3" | tee -a "$results/summary.txt"; }

run_all() {
  results=$(mkdir -p "${1:-$root/gpu-results}" && cd "${1:-$root/gpu-results}" && pwd)
  rm -f "$results/summary.txt"
  local build=${COMET_GPU_BUILD:-$root/build-gpu} status=0 gpu=1
  [[ -f $bundle/run.sh ]] || { echo "gpu-run: no bundle at $bundle (gpu-run.sh bundle)" >&2; return 1; }
  # Unpacked beside the build, so that the bundle stays small enough to be
  # carried again.
  local packed=$bundle
  bundle=$build-bundle
  if [[ ! -f $bundle/.unpacked || $packed/run.sh -nt $bundle/.unpacked ]]; then
    rm -rf "$bundle"
    cp -a "$packed" "$bundle"
    "$bundle/run.sh" --unpack-only
    [[ ! -f $bundle/activations.tar.xz ]] || tar -xJf "$bundle/activations.tar.xz" -C "$bundle"
    touch "$bundle/.unpacked"
  fi
  local deps=$bundle/deps/usr lib=$bundle/deps/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

  { date -u; uname -a; nvidia-smi 2>&1; nvcc --version 2>&1; cmake --version | head -1; } \
    >"$results/machine.txt"
  if ! nvidia-smi -L >/dev/null 2>&1; then
    gpu=0
    echo "gpu-run: no CUDA device: a rehearsal, the device legs are skipped"
  fi

  # cuDNN and cuBLAS: the toolkit's, else PyTorch's pip wheels.
  if [[ -z ${CUDNN_ROOT:-} ]] && command -v python3 >/dev/null; then
    local wheels
    wheels=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]) + "/nvidia")' 2>/dev/null || true)
    # Each only where the wheel has its headers too; else the toolkit's.
    if [[ -n $wheels && -f $wheels/cudnn/include/cudnn.h ]]; then
      export CUDNN_ROOT=$wheels/cudnn
      export LD_LIBRARY_PATH=$wheels/cudnn/lib:$LD_LIBRARY_PATH
    fi
    if [[ -n $wheels && -f $wheels/cublas/include/cublas_v2.h ]]; then
      export CUBLAS_ROOT=$wheels/cublas
      export LD_LIBRARY_PATH=$wheels/cublas/lib:$LD_LIBRARY_PATH
    fi
    echo "cuDNN: ${CUDNN_ROOT:-toolkit}; cuBLAS: ${CUBLAS_ROOT:-toolkit}" \
      >>"$results/machine.txt"
  fi

  # Build: runtime-only, tests on, the device's own architecture.
  local arch=${COMET_CUDA_ARCH:-}
  [[ -n $arch ]] || { ((gpu)) && arch=native || arch=90-real; }
  local t0=$SECONDS
  if cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DCOMET_RUNTIME_ONLY=ON -DCOMET_ENABLE_PYTHON=OFF \
      -DCOMET_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      -Ddnnl_DIR="$lib/cmake/dnnl" -DZLIB_ROOT="$deps" -DZLIB_INCLUDE_DIR="$deps/include" \
      -DZLIB_LIBRARY="$lib/libz.so" -DGTest_DIR="$lib/cmake/GTest" \
      -DCMAKE_PREFIX_PATH="$deps" ${COMET_GPU_CMAKE_ARGS:-} >"$results/configure.log" 2>&1 &&
    ninja -C "$build" -j "${COMET_JOBS:-$(nproc)}" >"$results/build.log" 2>&1; then
    if grep -q "CUDA backend ON" "$results/configure.log"; then
      summary build ok "$((SECONDS - t0)) s, CUDA backend ON ($arch)"
    else
      summary build FAIL "the CUDA backend is OFF (configure.log: cuDNN or cuBLAS not found)"
      return 1
    fi
  else
    summary build FAIL "see configure.log / build.log"
    tail -30 "$results/build.log" 2>/dev/null
    return 1
  fi

  if want gpu-tests; then
    # 1. The GPU tests.
    local rc=0
    (cd "$build" && CI=${CI:-} ctest -L gpu --output-on-failure --timeout "${COMET_GPU_TEST_TIMEOUT:-300}" \
      --output-junit "$results/gpu-tests.xml") >"$results/gpu-tests.log" 2>&1 || rc=$?
    local counts
    counts=$(grep -E "tests passed|tests failed" "$results/gpu-tests.log" | tail -1)
    local skipped
    skipped=$(grep -c "(Skipped)$" "$results/gpu-tests.log" || true)
    if ((rc != 0)); then
      summary gpu-tests FAIL "$counts"
      status=1
    elif ((gpu)) && ((skipped > 0)); then
      summary gpu-tests FAIL "$counts; $skipped skipped on a GPU machine"
      status=1
    else
      summary gpu-tests "$( ((gpu)) && echo ok || echo skipped)" "$counts ($skipped skipped)"
    fi
  fi

  if want matches; then
    # 2. cuda against cpu against the bundle's cpu report (and ORT's log).
    mkdir -p "$results/matches"
    cp -f "$bundle/reference/ort-match.log" "$results/matches/" 2>/dev/null
    local so name bad=0 ran=0 skippedSteps=0
    for so in "$bundle"/steps/*.so; do
      name=$(basename "$so" .so)
      rc=0
      # shellcheck disable=SC2046
      timeout "${COMET_GPU_STEP_TIMEOUT:-180}" python3 "$root/test/gpu/cuda_matches_cpu.py" --rtol 1e-4 \
        --keep "$results/matches/$name" -- "$build/bin/comet-run" "$so" \
        $(cat "$bundle/steps/$name.args") >"$results/matches/$name.log" 2>&1 || rc=$?
      if ((rc == 77)); then
        ((skippedSteps++))
      elif ((rc != 0)); then
        ((bad++))
        echo "$name: cuda against cpu failed (matches/$name.log)"
      fi
      ((ran++))
      # The cpu run against this bundle's reference report.
      if [[ -f $results/matches/$name/cpu.json ]]; then
        python3 "$root/test/gpu/cuda_matches_cpu.py" --rtol 1e-4 \
          --compare "$bundle/reference/$name.json" "$results/matches/$name/cpu.json" \
          >"$results/matches/$name.reference.log" 2>&1 ||
          { ((bad++)); echo "$name: cpu against the bundle's reference failed"; }
      else
        ((bad++))
        echo "$name: no cpu report (matches/$name.log)"
      fi
    done
    local ort
    ort=$(tail -1 "$results/matches/ort-match.log" 2>/dev/null | tr -d '=' | xargs)
    if ((bad)); then
      summary matches FAIL "$bad of $ran steps failed; ORT (bundle): $ort"
      status=1
    elif ((skippedSteps)); then
      summary matches cpu-only "$ran steps: cpu runs match the bundle; cuda skipped ($skippedSteps); ORT (bundle): $ort"
    else
      summary matches ok "$ran steps: cuda = cpu = bundle within 1e-4; ORT (bundle): $ort"
    fi
  fi

  if want codec-bench; then
    # 3. The codec benchmark by class.
    if ! ((gpu)); then
      summary codec-bench skipped "no CUDA device"
    elif COMET_BUILD_DIR=$build PYTHONPATH=$root/python python3 -m comet.bench_codec_cuda \
        --data "$bundle/activations" --gib "${COMET_GPU_BENCH_GIB:-1}" \
        --json "$results/bench_codec_cuda.json" >"$results/bench_codec_cuda.txt" 2>&1; then
      summary codec-bench ok "bench_codec_cuda.txt"
    else
      summary codec-bench FAIL "bench_codec_cuda.txt"
      status=1
    fi
  fi

  if want bench-peers; then
    # 4. The memory benchmark against PyTorch on the GPU.
    if ! ((gpu)); then
      summary bench-peers skipped "no CUDA device"
    elif ! unpack_peers; then
      summary bench-peers FAIL "no peers/ in the bundle (COMET_GPU_PEERS=0)"
      status=1
    elif PYTHONPATH=$root/python python3 -m comet.bench_peers_cuda \
        --peers "$bundle/peers" --comet-run "$build/bin/comet-run" \
        --steps "${COMET_GPU_PEERS_STEPS:-3}" \
        --json "$results/bench_peers_cuda.json" >"$results/bench_peers_cuda.txt" 2>&1; then
      summary bench-peers ok "bench_peers_cuda.txt"
    else
      summary bench-peers FAIL "bench_peers_cuda.txt"
      status=1
    fi
  fi

  if want profile; then
    # 5. Where a step's time goes: COMET_RT_PROFILE (every runtime call
    # waited for and timed by entry; a device fault names the entry that
    # caused it) on the bench-peers steps, run as that leg runs them (two
    # steps, so the first step's one-time costs show), and on the
    # transformer's step with its bundled flags.
    if ! ((gpu)); then
      summary profile skipped "no CUDA device"
    else
      local pbad=0
      if ! unpack_peers || ! PYTHONPATH=$root/python python3 -m comet.bench_peers_cuda \
          --peers "$bundle/peers" --comet-run "$build/bin/comet-run" \
          --runs comet-none,comet-static --warmup 1 --steps 1 \
          --profile-dir "$results" --json "$results/profile-runs.json" \
          >"$results/profile-runs.txt" 2>&1; then
        ((pbad++))
        echo "profile: the bench steps failed (profile-runs.txt)"
      fi
      rm -f "$results/profile-transformer.txt"
      # shellcheck disable=SC2046
      COMET_RT_PROFILE="$results/profile-transformer.txt" timeout 120 \
        "$build/bin/comet-run" "$bundle/steps/transformer.so" --device cuda \
        $(cat "$bundle/steps/transformer.args") >"$results/profile-transformer.log" 2>&1 ||
        { ((pbad++)); echo "profile: the transformer's step failed"; }
      if ((pbad)); then summary profile FAIL "$pbad of 2 failed (profile-runs.txt, profile-transformer.log)"; status=1
      else summary profile ok "profile-*.txt"; fi
    fi
  fi

  if want sanitizer; then
    # 6. compute-sanitizer (last: the slowest, and the rest does not wait on
    # it): memcheck and racecheck on the CUDA codec and kernel tests (the
    # codec's robustness cases, thousands of small decodes, left out of
    # racecheck: they run the kernels the other cases race-check), and
    # memcheck on the transformer's whole step.
    if ! ((gpu)); then
      summary sanitizer skipped "no CUDA device"
    elif ! command -v compute-sanitizer >/dev/null; then
      summary sanitizer FAIL "compute-sanitizer not found (CUDA toolkit's bin/)"
      status=1
    else
      local tool test bin sbad=0 sruns=0 filter
      for tool in ${COMET_SANITIZER_TOOLS:-memcheck racecheck}; do
        for test in ${COMET_SANITIZER_SUITES:-CodecCuda/CometCodecCudaTests RuntimeCuda/CometRuntimeCudaKernelTests}; do
          bin=$build/test/unittests/$test
          [[ -x $bin ]] || bin=$(find "$build/test" -name "$(basename "$test")" -type f | head -1)
          filter="*"
          [[ $tool == racecheck && $test == CodecCuda/* ]] && filter="-CodecCudaRobustness.*"
          rc=0
          ((sruns++))
          GTEST_FILTER=$filter timeout "${COMET_SANITIZER_TIMEOUT:-600}" compute-sanitizer --tool "$tool" --error-exitcode 1 \
            ${COMET_SANITIZER_ARGS:-} "$bin" >"$results/sanitizer-$tool-$(basename "$test").log" 2>&1 || rc=$?
          ((rc == 0)) || { ((sbad++)); echo "$tool $(basename "$test"): exit $rc"; }
        done
      done
      if [[ -f $bundle/steps/transformer.so ]]; then
        rc=0
        ((sruns++))
        timeout "${COMET_SANITIZER_TIMEOUT:-600}" compute-sanitizer --tool memcheck --error-exitcode 1 \
          "$build/bin/comet-run" "$bundle/steps/transformer.so" --device cuda --data synthetic \
          --synthetic-size 16 --max-steps 1 --eval-samples -1 --quiet \
          >"$results/sanitizer-memcheck-comet-run-transformer.log" 2>&1 || rc=$?
        ((rc == 0)) || { ((sbad++)); echo "memcheck comet-run transformer: exit $rc"; }
      fi
      if ((sbad)); then summary sanitizer FAIL "$sbad of $sruns runs"; status=1
      else summary sanitizer ok "memcheck and racecheck, codec and kernels; memcheck, a transformer step"; fi
    fi
  fi

  echo "results: $results"
  return $status
}

case $mode in
bundle) make_bundle "$@" ;;
peers)
  # Only the bench-peers steps, into an existing bundle.
  b=$(cd "${1:-$root/build}" && pwd)
  w=$(mktemp -d)
  make_peers "$b" "${COMET_TORCH_MODELS:-$b/models}" "$w"
  rc=$?
  rm -rf "$w"
  exit $rc
  ;;
run) run_all "$@" ;;
*)
  sed -n '2,/^set -uo/{/^set -uo/!p}' "$0" >&2
  exit 2
  ;;
esac
