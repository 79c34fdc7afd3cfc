#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (build-fuzz/, STAR_FUZZ=ON) and runs each
# for a fixed number of executions, one after another, then prints target / execs / time / result.
#
#   scripts/fuzz/run_fuzzers.sh [--runs N] [--max-time S] [--build DIR] [TARGET...]
#
# N defaults to 1000000 (the long pass); --max-time stops each target after S seconds instead,
# for a machine too busy to reach N (the table says how many runs it reached). TARGETs are names
# under tests/fuzz (gguf_reader, ...); none: all. Inputs a run finds go to DIR/fuzz-corpus/<target>/ (the seeds in
# tests/fuzz/corpus/<target>/ are read, never written); crashes, leaks and timeouts to
# DIR/fuzz-artifacts/<target>/. A finding is fixed in the module and its input copied into
# tests/fuzz/corpus/<target>/crash-<what>, where the 'fuzz' ctest label replays it.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs=1000000
max_time=0
build=build-fuzz
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --max-time) max_time="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "run_fuzzers: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for source in tests/fuzz/*.cpp; do
    name=$(basename "$source" .cpp)
    [ "$name" = replay_main ] || targets+=("$name")
  done
fi

if ! command -v clang++ >/dev/null || [ -z "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a | grep /)" ]; then
  echo "run_fuzzers: needs clang++ with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DSTAR_FUZZ=ON -DSTAR_SANITIZER_TESTS=OFF -DSTAR_WITH_CUDA=OFF "${launcher[@]}" \
  ${STAR_SHARED_DIR:+-DSTAR_SHARED_DIR="$STAR_SHARED_DIR"} >/dev/null
nice -n 10 cmake --build "$build" -j"${STAR_BUILD_JOBS:-2}" --target "${targets[@]/#/fuzz_}"

# Per input: 25 s before it counts as a hang (the slowest legitimate inputs, a whole tiny model
# loaded under ASan, take well under a second); 2 GiB before it counts as a runaway allocation.
# Inputs up to 8 KiB: larger ones add nothing the parsers' length fields cannot express.
flags=(-max_len=8192 -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1
       -max_total_time="$max_time")

results=()
failed=0
for target in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$target"
  artifacts="$build/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  log="$build/fuzz-$target.log"
  echo "== $target: $runs runs (log $log)"
  start=$(date +%s)
  status=0
  nice -n 10 "$build/fuzz_$target" -runs="$runs" -artifact_prefix="$artifacts/" "${flags[@]}" \
    "$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  seconds=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$status" -eq 0 ] && [ "${execs:-0}" -lt "$runs" ]; then
    result="ok, stopped at --max-time"
  elif [ "$status" -eq 0 ]; then
    result=ok
  else
    failed=1
    result="FAILED ($(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-z-]+|runtime error|property failed|fuzz target setup failed|out-of-memory|timeout' "$log" || echo "exit $status")); see $log"
  fi
  results+=("$(printf '%-20s %10s %8ss  %s' "$target" "${execs:-?}" "$seconds" "$result")")
  echo "${results[-1]}"
done

echo
printf '%-20s %10s %9s  %s\n' target execs time result
printf '%s\n' "${results[@]}"
exit "$failed"
