#!/usr/bin/env bash
# Compiles training steps ahead of time here (comet-compile) and packs what
# a machine without LLVM/MLIR needs to build comet-run from source and run
# them (docs/aot.md):
#
#   BUNDLE/src/        the source tree (tracked and untracked, not ignored)
#   BUNDLE/steps/      NAME.so (the step) and NAME.args (comet-run's flags)
#   BUNDLE/reference/  NAME.json, comet-run's report on this machine
#   BUNDLE/deps/       oneDNN and zlib (headers, libraries, CMake files)
#   BUNDLE/run.sh      configures src with COMET_RUNTIME_ONLY=ON, builds
#                      comet-run, runs every step and prints its losses
#                      beside the reference's; with the CUDA backend, also
#                      compares each step's --device cuda run with its cpu one
#
# usage: scripts/aot-bundle.sh [BUILD_DIR [BUNDLE_DIR]]
#   defaults: build, BUILD_DIR/aot-bundle. COMET_AOT_MCPU (default
#   x86-64-v3) is the CPU the steps are compiled for. For scripts/gpu-run.sh:
#   COMET_AOT_SRC=0       leaves src/ out (the source tree travels itself)
#   COMET_AOT_STEPS       more steps, one a line: NAME|COMPILE ARGS[|RUN FLAGS]
#   COMET_AOT_GTEST=1     adds GoogleTest (libgtest-dev) to deps/
#   COMET_AOT_PACK=1      xz-compresses deps/ (deps.tar.xz) and every step
#                         (NAME.so.xz); run.sh unpacks them first
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
out=${2:-$build/aot-bundle}
mcpu=${COMET_AOT_MCPU:-x86-64-v3}
limit=$((64 * 1024 * 1024))
for tool in comet-compile comet-run; do
  [[ -x $build/bin/$tool ]] || { echo "aot-bundle: $build/bin/$tool is not built" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/src" "$out/steps" "$out/reference" "$out/deps"
fixtures=$src/test/fixtures/models
run_flags="--data synthetic --seed 1 --synthetic-size 1280 --max-steps 10 --eval-samples 256 --quiet"

# name | comet-compile arguments [| comet-run flags, default run_flags]
steps=(
  "lenet-static|$fixtures/lenet --compress static --batch 64"
  "lenet-none|$fixtures/lenet --compress none --optimizer builtin --batch 64"
  "resnet-static|$fixtures/resnet --compress static --batch 32 --optimizer $fixtures/resnet/optimizer_model.onnx"
)
while IFS= read -r line; do
  [[ -n $line ]] && steps+=("$line")
done <<<"${COMET_AOT_STEPS:-}"
printf '%-16s %10s %12s\n' step bytes final_loss
for s in "${steps[@]}"; do
  IFS='|' read -r name compile flags <<<"$s"
  flags=${flags:-$run_flags}
  # shellcheck disable=SC2086
  "$build/bin/comet-compile" $compile --mcpu "$mcpu" -o "$out/steps/$name.so"
  echo "$flags" > "$out/steps/$name.args"
  # shellcheck disable=SC2086
  "$build/bin/comet-run" "$out/steps/$name.so" $flags --report "$out/reference/$name.json"
  loss=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["final_loss"])' "$out/reference/$name.json")
  printf '%-16s %10d %12.6f\n' "$name" "$(stat -c %s "$out/steps/$name.so")" "$loss"
done

# The source tree as the device tool sends it: tracked and untracked files
# that git does not ignore.
if [[ ${COMET_AOT_SRC:-1} != 0 ]]; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
    tar --null -T - -cf -) | tar -xf - -C "$out/src"
else
  rmdir "$out/src"
fi

# oneDNN and zlib from this machine's Debian packages, in their own layout
# (oneDNN's CMake files find the library relative to themselves).
pkgs=(libdnnl2 libdnnl-dev zlib1g-dev)
[[ ${COMET_AOT_GTEST:-0} == 1 ]] && pkgs+=(libgtest-dev)
for pkg in "${pkgs[@]}"; do
  dpkg -L "$pkg" | while read -r f; do
    [[ -f $f && $f != /usr/share/* ]] || continue
    mkdir -p "$out/deps$(dirname "$f")"
    cp -a "$f" "$out/deps$f"
  done
done
# The symbolic links of the libraries (dpkg -L lists them as files).
# A link to an absolute path (Debian's libz.so -> /lib/...) is made
# relative: it must resolve inside deps/ on the other machine.
for l in /usr/lib/x86_64-linux-gnu/libdnnl.so* /usr/lib/x86_64-linux-gnu/libz.so*; do
  if [[ -L $l && $(readlink "$l") == /* ]]; then
    ln -sfn "$(basename "$(readlink "$l")")" "$out/deps$l"
  else
    cp -a "$l" "$out/deps$l"
  fi
done

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Builds the runtime and comet-run from src/ without LLVM/MLIR and runs every
# compiled step of steps/, printing its losses beside this bundle's reference.
#   run.sh --unpack-only   only unpacks deps.tar.xz and steps/*.so.xz
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
deps=$here/deps/usr
# A packed bundle (COMET_AOT_PACK=1): unpack once.
[[ -d $here/deps || ! -f $here/deps.tar.xz ]] || tar -xJf "$here/deps.tar.xz" -C "$here"
for z in "$here"/steps/*.so.xz; do
  [[ -f $z && ! -f ${z%.xz} ]] && xz -dk "$z"
done
[[ ${1:-} == --unpack-only ]] && exit 0
cmake -G Ninja -S "$here/src" -B "$here/build-rt" -DCMAKE_BUILD_TYPE=Release \
  -DCOMET_RUNTIME_ONLY=ON -DBUILD_TESTING=OFF -DCOMET_ENABLE_PYTHON=OFF \
  -Ddnnl_DIR="$deps/lib/x86_64-linux-gnu/cmake/dnnl" -DZLIB_ROOT="$deps" \
  -DCMAKE_PREFIX_PATH="$deps" >"$here/configure.log"
ninja -C "$here/build-rt" comet-run >"$here/build.log"
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$here/reports"
status=0
for so in "$here"/steps/*.so; do
  name=$(basename "$so" .so)
  # shellcheck disable=SC2046
  "$here/build-rt/bin/comet-run" "$so" $(cat "$here/steps/$name.args") \
    --report "$here/reports/$name.json" || { status=1; continue; }
  python3 - "$here/reference/$name.json" "$here/reports/$name.json" "$name" <<'PY'
import json, sys
ref, got = (json.load(open(p)) for p in sys.argv[1:3])
same = ref["loss_history"] == got["loss_history"]
print(f"{sys.argv[3]}: {got['steps']} steps, final loss {got['final_loss']:.6f} "
      f"(reference {ref['final_loss']:.6f}, losses {'identical' if same else 'differ'}), "
      f"peak {got['peak_bytes']} B (reference {ref['peak_bytes']} B)")
PY
done
# With the CUDA backend (nvcc, cuDNN and cuBLAS found; CUDNN_ROOT and
# CUBLAS_ROOT in the environment point at other copies), each step again
# with --device cuda against --device cpu (docs/cuda.md).
if grep -q "CUDA backend ON" "$here/configure.log"; then
  for so in "$here"/steps/*.so; do
    name=$(basename "$so" .so)
    echo "$name: --device cuda against --device cpu"
    rc=0
    # shellcheck disable=SC2046
    python3 "$here/src/test/gpu/cuda_matches_cpu.py" -- \
      "$here/build-rt/bin/comet-run" "$so" $(cat "$here/steps/$name.args") || rc=$?
    [[ $rc == 0 || $rc == 77 ]] || status=1
  done
fi
exit $status
RUN
chmod +x "$out/run.sh"

if [[ ${COMET_AOT_PACK:-0} == 1 ]]; then
  tar -cJf "$out/deps.tar.xz" -C "$out" deps
  rm -rf "$out/deps"
  xz -T2 -6 "$out"/steps/*.so
fi

size=$(du -sb "$out" | cut -f1)
echo "bundle: $out, $size bytes ($(du -sh "$out" | cut -f1))"
if ((size >= limit)); then
  echo "aot-bundle: the bundle is over 64 MiB" >&2
  exit 1
fi
