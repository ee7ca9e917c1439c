#!/usr/bin/env bash
# usage: sanitizers.sh [BUILD_DIR]
# Configures (once, scripts/configure-san.sh) and builds a clang-22
# runtime-only tree with ASan and UBSan and the libFuzzer targets, runs its
# ctest, then runs the runtime fuzzers (codec decoders, codec round trip,
# IDX parser, .npy/.npz readers) through `scripts/fuzz.sh --ci`: a fixed
# seed and a fixed number of executions, so every run gives the same result.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-san}
jobs=${COMET_JOBS:-2}
"$root/scripts/configure-san.sh" "$build"
cmake --build "$build" -j "$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# A failing test does not stop the fuzzers; the exit status reports both.
status=0
(cd "$build" && ctest --output-on-failure -j "$jobs") || status=1
COMET_SAN_BUILD=$build COMET_FUZZ_OUT=$build/fuzz-out \
  "$root/scripts/fuzz.sh" --ci codec-decode codec-roundtrip idx-parse npy-parse ||
  status=1
exit $status
