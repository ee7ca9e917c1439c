#!/usr/bin/env bash
# usage: fuzz.sh SECONDS [FUZZER...]    a campaign: random seed, SECONDS each
#        fuzz.sh --ci [FUZZER...]       CI: the same result on every run
# Builds the libFuzzer targets under ASan and UBSan with clang-22 and runs
# each named one (default: all), one after another:
#   codec-decode     the codec decoders (comet_rt_codec_decompress)
#   codec-roundtrip  compress then decompress of arbitrary arrays
#   idx-parse        the IDX dataset parser (comet_rt_idx_parse)
#   npy-parse        the .npy/.npz readers and datasets from arrays
#   import           the ONNX importer (protobuf reader, import, inference)
#   checkpoint       the ONNX Runtime checkpoint reader and writer
# Each first runs its regression inputs (test/fuzz*/regressions/...) once,
# then fuzzes from its seeds. A campaign keeps its corpus in
# $COMET_FUZZ_OUT/<fuzzer>/corpus between runs; SECONDS=0 means no time
# limit, and COMET_FUZZ_RUNS caps the executions instead (or as well).
# --ci fuzzes with seed COMET_FUZZ_SEED (default 1) for the fixed number of
# executions below (COMET_FUZZ_RUNS overrides it), from the checked-in seeds
# alone and with address randomization off, so two runs execute the same
# inputs. Prints one row per fuzzer: the executions libFuzzer counted and
# the findings (crash, leak, timeout, oom files, kept in
# $COMET_FUZZ_OUT/<fuzzer>/). Exits non-zero on any finding.
#
# Build trees: COMET_SAN_BUILD (default build-san; the runtime-only tree of
# scripts/sanitizers.sh) and COMET_FUZZ_IMPORT_BUILD (default
# build-fuzz-import; test/fuzz-import/tree). COMET_JOBS: build jobs (2).
# COMET_FUZZ_TIMEOUT: seconds one input may take before it counts as a
# timeout finding (default 10, import 20); raise it for a campaign that runs
# at low priority beside other work, where a starved input only looks hung.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ci=0
if [ "${1:-}" = --ci ]; then
  ci=1 secs=0
elif [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  secs=$1
else
  sed -n '2,/^set -euo/{/^set -euo/!p}' "$0" >&2
  exit 2
fi
shift
names=("$@")
[ ${#names[@]} -gt 0 ] ||
  names=(codec-decode codec-roundtrip idx-parse npy-parse import checkpoint)
san=${COMET_SAN_BUILD:-$root/build-san}
imp=${COMET_FUZZ_IMPORT_BUILD:-$root/build-fuzz-import}
out=${COMET_FUZZ_OUT:-$root/build-fuzz-out}
jobs=${COMET_JOBS:-2}
cxx=$(command -v clang++-22 || echo /usr/lib/llvm-22/bin/clang++)
cc=$(command -v clang-22 || echo /usr/lib/llvm-22/bin/clang)

# Executions per fuzzer under --ci: about 30-60 s each on a 2-core machine
# that runs other tests beside it (docs/testing.md has the rates).
ci_runs() {
  case $1 in
  codec-decode) echo 400000 ;;
  codec-roundtrip) echo 300000 ;;
  idx-parse) echo 3000000 ;;
  npy-parse) echo 2000000 ;;
  import) echo 40000 ;;
  checkpoint) echo 600000 ;;
  esac
}

need_san=0 need_imp=0 imp_targets=()
for n in "${names[@]}"; do
  case $n in
  codec-decode | codec-roundtrip | idx-parse | npy-parse) need_san=1 ;;
  import) need_imp=1 imp_targets+=(fuzz_import) ;;
  checkpoint) need_imp=1 imp_targets+=(fuzz_checkpoint) ;;
  *) echo "fuzz.sh: unknown fuzzer '$n'" >&2; exit 2 ;;
  esac
done
if [ $need_san = 1 ]; then
  "$root/scripts/configure-san.sh" "$san" >/dev/null
  cmake --build "$san" -j "$jobs" --target codec-decode-fuzzer \
    codec-roundtrip-fuzzer idx-parse-fuzzer npy-parse-fuzzer
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
  npy-parse)
    bin=$san/fuzz-rt/npy-parse-fuzzer
    seeds=("$root/test/fuzz-rt/corpus/npy")
    regs=("$root"/test/fuzz-rt/regressions-npy/*) ;;
  import)
    bin=$imp/fuzz_import
    # The lit inputs and the generate_artifacts fixtures (training, eval,
    # optimizer and forward graphs) up to COMET_FUZZ_MAX_LEN bytes (64 KiB:
    # mutations stay cheap), and for a campaign the .onnx files under the
    # folders of COMET_FUZZ_EXTRA_SEEDS (colon-separated; the PyTorch
    # exports, say).
    cap=${COMET_FUZZ_MAX_LEN:-65536}
    seed=$out/import/seeds
    rm -rf "$seed"
    mkdir -p "$seed"
    extra_seeds=()
    IFS=: read -r -a dirs <<<"${COMET_FUZZ_EXTRA_SEEDS:-}"
    for d in "${dirs[@]}"; do
      [ -n "$d" ] && while IFS= read -r f; do extra_seeds+=("$f"); done \
        < <(find "$d" -name '*.onnx' | sort)
    done
    for f in "$root"/test/Import/Inputs/*.onnx \
             "$root"/test/fixtures/models/*/*.onnx "${extra_seeds[@]}"; do
      if [ "$(stat -c %s "$f")" -le "$cap" ]; then
        cp -f "$f" "$seed/$(echo "${f#"$root"/}" | tr / _)"
      fi
    done
    seeds=("$seed")
    # The lit tests' broken models are regression inputs too.
    regs=("$root"/test/fuzz-import/regressions/* \
          "$root"/test/Import/Inputs/bad-*.onnx)
    extra=(-max_len=$((cap > 131072 ? cap : 131072))
           -timeout="${COMET_FUZZ_TIMEOUT:-20}") ;;
  checkpoint)
    bin=$imp/fuzz_checkpoint
    # The fixtures' checkpoints up to 128 KiB, ONNX Runtime's after
    # training (optimizer state, properties), the writer's
    # (seeds-checkpoint/), and the truncated halves of two of them.
    seed=$out/checkpoint/seeds
    rm -rf "$seed"
    mkdir -p "$seed"
    for f in "$root"/test/fixtures/models/*/checkpoint; do
      if [ "$(stat -c %s "$f")" -le 131072 ]; then
        cp -f "$f" "$seed/$(basename "$(dirname "$f")")"
      fi
    done
    for f in "$root"/test/fixtures/checkpoints/* \
             "$root"/test/fuzz-import/seeds-checkpoint/*; do
      case $f in *.py | *.md) continue ;; esac
      cp -f "$f" "$seed/$(basename "$f")"
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
  # Under --ci the corpus starts from the seeds alone, every run.
  [ $ci = 1 ] && rm -rf "$dir/corpus"
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
  wrap=()
  if [ $ci = 1 ]; then
    runs=${COMET_FUZZ_RUNS:-$(ci_runs "$n")}
    # -reload=0: rereading the corpus folder every second is timing.
    limits=(-seed="${COMET_FUZZ_SEED:-1}" -runs="$runs" -reload=0)
    # Hash tables keyed by addresses (MLIR's uniquing) probe differently
    # from run to run under randomized addresses, and coverage follows.
    wrap=(setarch "$(uname -m)" -R)
    echo "== $n: $runs runs, seed ${COMET_FUZZ_SEED:-1}, from ${seeds[*]}"
  else
    limits=(-max_total_time="$secs")
    [ -n "${COMET_FUZZ_RUNS:-}" ] && limits+=(-runs="$COMET_FUZZ_RUNS")
    echo "== $n: ${secs}s${COMET_FUZZ_RUNS:+, at most $COMET_FUZZ_RUNS runs} from ${seeds[*]}"
  fi
  rc=0
  "${wrap[@]}" "$bin" "${limits[@]}" -timeout="${COMET_FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb=2048 \
    -print_final_stats=1 "${extra[@]}" -artifact_prefix="$dir/" \
    "$dir/corpus" "${seeds[@]}" >"$dir/fuzz.log" 2>&1 || rc=$?
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
  # Coverage, features and corpus size at the end: under --ci, the same on
  # every run.
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/fuzz.log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done_line")
  rows+=("$(printf '%-16s %11s %7s %7s %6s %9s  %s' "$n" "${execs:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$count" "$(echo $findings)")")
done

printf '\n%-16s %11s %7s %7s %6s %9s  %s\n' fuzzer executions cov ft corpus \
  findings files
printf '%s\n' "${rows[@]}"
exit $status
