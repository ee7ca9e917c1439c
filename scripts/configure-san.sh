#!/usr/bin/env bash
# usage: configure-san.sh BUILD_DIR
# Configures (once) the clang-22 runtime-only tree with ASan, UBSan and the
# libFuzzer targets that scripts/sanitizers.sh and scripts/fuzz.sh build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$1
[ -f "$build/CMakeCache.txt" ] && exit 0
cxx=$(command -v clang++-22 || echo /usr/lib/llvm-22/bin/clang++)
cc=$(command -v clang-22 || echo /usr/lib/llvm-22/bin/clang)
# LLVM 22 ships no libomp here: clang uses GCC's libgomp and, through a
# folder holding only it, GCC's omp.h.
gomp=$(g++ -print-file-name=libgomp.so)
mkdir -p "$build/omp-include"
ln -sf "$(g++ -print-file-name=include)/omp.h" "$build/omp-include/omp.h"
cmake -G Ninja -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCOMET_RUNTIME_ONLY=ON -DCOMET_SANITIZE=address,undefined \
  -DCOMET_ENABLE_FUZZERS=ON -DCOMET_ENABLE_PYTHON=OFF \
  -DCOMET_ENABLE_CUDA=OFF \
  -DOpenMP_CXX_FLAGS="-fopenmp=libgomp -isystem $build/omp-include" \
  -DOpenMP_CXX_LIB_NAMES=gomp \
  -DOpenMP_gomp_LIBRARY="$gomp"
