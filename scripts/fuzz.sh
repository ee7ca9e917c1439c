#!/usr/bin/env bash
# usage: fuzz.sh SECONDS [FUZZER...]
# Builds the libFuzzer targets under ASan and UBSan with clang-22 and runs
# each named one (default: all) for SECONDS, one after another:
#   codec-decode     the codec decoders (comet_rt_codec_decompress)
#   codec-roundtrip  compress then decompress of arbitrary arrays
#   idx-parse        the IDX dataset parser (comet_rt_idx_parse)
#   import           the ONNX importer (protobuf reader, import, inference)
#   checkpoint       the ONNX Runtime checkpoint reader (FlatBuffers)
# Each first runs its regression inputs (test/fuzz*/regressions/...) once,
# then fuzzes from its seeds. SECONDS=0 means no time limit; COMET_FUZZ_RUNS
# caps the executions instead (or as well). Prints one row per fuzzer: the
# executions libFuzzer counted and the findings (crash, leak, timeout, oom
# files, kept in $COMET_FUZZ_OUT/<fuzzer>/). Exits non-zero on any finding.
#
# Build trees: COMET_SAN_BUILD (default build-san; the runtime-only tree of
# scripts/sanitizers.sh) and COMET_FUZZ_IMPORT_BUILD (default
# build-fuzz-import; test/fuzz-import/tree). COMET_JOBS: build jobs (2).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  sed -n '2,18p' "$0" >&2
  exit 2
fi
secs=$1
shift
names=("$@")
[ ${#names[@]} -gt 0 ] ||
  names=(codec-decode codec-roundtrip idx-parse import checkpoint)
san=${COMET_SAN_BUILD:-$root/build-san}
imp=${COMET_FUZZ_IMPORT_BUILD:-$root/build-fuzz-import}
out=${COMET_FUZZ_OUT:-$root/build-fuzz-out}
jobs=${COMET_JOBS:-2}
cxx=$(command -v clang++-22 || echo /usr/lib/llvm-22/bin/clang++)
cc=$(command -v clang-22 || echo /usr/lib/llvm-22/bin/clang)

need_san=0 need_imp=0 imp_targets=()
for n in "${names[@]}"; do
  case $n in
  codec-decode | codec-roundtrip | idx-parse) need_san=1 ;;
  import) need_imp=1 imp_targets+=(fuzz_import) ;;
  checkpoint) need_imp=1 imp_targets+=(fuzz_checkpoint) ;;
  *) echo "fuzz.sh: unknown fuzzer '$n'" >&2; exit 2 ;;
  esac
done
if [ $need_san = 1 ]; then
  "$root/scripts/configure-san.sh" "$san" >/dev/null
  cmake --build "$san" -j "$jobs" --target codec-decode-fuzzer \
    codec-roundtrip-fuzzer idx-parse-fuzzer
fi
if [ $need_imp = 1 ]; then
  if [ ! -f "$imp/CMakeCache.txt" ]; then
    cmake -G Ninja -S "$root/test/fuzz-import/tree" -B "$imp" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
  fi
  cmake --build "$imp" -j "$jobs" --target "${imp_targets[@]}"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
rows=()
for n in "${names[@]}"; do
  seeds=() extra=() regs=()
  case $n in
  codec-decode | codec-roundtrip)
    bin=$san/bin/$n-fuzzer
    seeds=("$root/test/fuzz/corpus/${n#codec-}")
    regs=("$root"/test/fuzz/regressions/"${n#codec-}"/*) ;;
  idx-parse)
    bin=$san/fuzz-rt/idx-parse-fuzzer
    seeds=("$root/test/fuzz-rt/corpus/idx")
    regs=("$root"/test/fuzz-rt/regressions/*) ;;
  import)
    bin=$imp/fuzz_import
    # The lit inputs and the generate_artifacts fixtures (training, eval,
    # optimizer and forward graphs) up to 64 KiB, so mutations stay cheap.
    seed=$out/import/seeds
    mkdir -p "$seed"
    for f in "$root"/test/Import/Inputs/*.onnx \
             "$root"/test/fixtures/models/*/*.onnx; do
      if [ "$(stat -c %s "$f")" -le 65536 ]; then
        cp -f "$f" "$seed/$(echo "${f#"$root"/}" | tr / _)"
      fi
    done
    seeds=("$seed")
    # The lit tests' broken models are regression inputs too.
    regs=("$root"/test/fuzz-import/regressions/* \
          "$root"/test/Import/Inputs/bad-*.onnx)
    extra=(-max_len=131072 -timeout=20) ;;
  checkpoint)
    bin=$imp/fuzz_checkpoint
    # The fixtures' checkpoints up to 128 KiB, and the truncated halves of
    # two of them.
    seed=$out/checkpoint/seeds
    mkdir -p "$seed"
    for f in "$root"/test/fixtures/models/*/checkpoint; do
      if [ "$(stat -c %s "$f")" -le 131072 ]; then
        cp -f "$f" "$seed/$(basename "$(dirname "$f")")"
      fi
    done
    for m in lenet resnet; do
      f=$root/test/fixtures/models/$m/checkpoint
      head -c $(($(stat -c %s "$f") / 2)) "$f" >"$seed/$m-half"
    done
    seeds=("$seed")
    regs=("$root"/test/fuzz-import/regressions-checkpoint/*)
    extra=(-max_len=131072) ;;
  esac
  dir=$out/$n
  mkdir -p "$dir/corpus"
  rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*
  # Regression inputs: every one must still run clean.
  files=()
  for f in "${regs[@]}"; do [ -f "$f" ] && files+=("$f"); done
  if [ ${#files[@]} -gt 0 ]; then
    if ! "$bin" -rss_limit_mb=2048 "${extra[@]}" "${files[@]}" \
        >"$dir/regressions.log" 2>&1; then
      echo "== $n: a regression input fails ($dir/regressions.log)"
      tail -n 40 "$dir/regressions.log"
      status=1
    fi
  fi
  limits=(-max_total_time="$secs")
  [ -n "${COMET_FUZZ_RUNS:-}" ] && limits+=(-runs="$COMET_FUZZ_RUNS")
  echo "== $n: ${secs}s${COMET_FUZZ_RUNS:+, at most $COMET_FUZZ_RUNS runs} from ${seeds[*]}"
  rc=0
  "$bin" "${limits[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${extra[@]}" -artifact_prefix="$dir/" "$dir/corpus" "${seeds[@]}" \
    >"$dir/fuzz.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" |
    tail -n 1)
  findings=$(find "$dir" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) | sort)
  count=$(printf '%s' "$findings" | grep -c . || true)
  if [ "$rc" != 0 ] || [ "$count" != 0 ]; then
    tail -n 40 "$dir/fuzz.log"
    status=1
  fi
  rows+=("$(printf '%-16s %14s %9s  %s' "$n" "${execs:-?}" "$count" \
    "$(echo $findings)")")
done

printf '\n%-16s %14s %9s  %s\n' fuzzer executions findings files
printf '%s\n' "${rows[@]}"
exit $status
