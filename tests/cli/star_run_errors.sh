#!/usr/bin/env bash
# Bad requests to `mpirun -np N star-run` end with a clear message from rank 0 and a non-zero exit,
# and no rank hangs (each case runs under a timeout). Then a good request still works.
# usage: star_run_errors.sh STAR_RUN STAR_MKMODEL
set -uo pipefail
star_run=$1
mkmodel=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mkmodel" --out "$work/model" --preset tiny --seed 3 --max-positions 256 >/dev/null || exit 1
for i in $(seq 1 12); do echo "Sentence number $i of the context."; done >"$work/context.txt"
for i in $(seq 1 200); do echo "A much longer context line number $i."; done >"$work/long.txt"

failures=0
checks=2  # the good requests at the end
# expect_failure NAME PATTERN NP ARGS...: non-zero exit (not a timeout) and PATTERN in the output.
expect_failure() {
  local name=$1 pattern=$2 np=$3
  shift 3
  checks=$((checks + 1))
  timeout 60 mpirun --oversubscribe --allow-run-as-root -np "$np" "$star_run" "$@" >"$work/out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q -- "$pattern" "$work/out"; then
    echo "FAIL $name: exit $rc, expected a message matching '$pattern':"
    sed 's/^/    /' "$work/out"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(grep -m1 -- "$pattern" "$work/out")"
  fi
}

m=(--model "$work/model" --max-tokens 8)
expect_failure "empty query" "query: empty" 2 "${m[@]}" --context-file "$work/context.txt" --query ""
expect_failure "context too long" "exceed the model's 256 positions" 2 "${m[@]}" --context-file "$work/long.txt" --query "q"
expect_failure "block size 0" "block_size" 2 "${m[@]}" --context-file "$work/context.txt" --query "q" --block-size 0
expect_failure "missing model" "$work/nope" 2 --model "$work/nope" --prompt "hi"
expect_failure "missing context file" "context-file" 2 "${m[@]}" --context-file "$work/nope.txt" --query "q"
expect_failure "unknown algorithm" "attention" 2 "${m[@]}" --context-file "$work/context.txt" --query "q" --attention sparkle
expect_failure "unknown backend" "backend" 2 "${m[@]}" --prompt "hi" --backend tpu
expect_failure "unknown kv dtype" "--kv-dtype: 'fp8' (f32, bf16 or q8_0)" 2 "${m[@]}" --prompt "hi" --kv-dtype fp8
expect_failure "q8_0 kv off whole blocks" "--kv-dtype q8_0 .* head_dim is 16" 2 "${m[@]}" --prompt "hi" --kv-dtype q8_0
# Without a GPU (or without the CUDA backend in this build) --backend cuda stops before any work.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  expect_failure "cuda without a GPU" "backend cuda: " 2 "${m[@]}" --prompt "hi" --backend cuda
fi

for kv in f32 bf16; do
  if ! timeout 60 mpirun --oversubscribe --allow-run-as-root -np 2 "$star_run" "${m[@]}" --context-file "$work/context.txt" \
      --query "q" --kv-dtype $kv >"$work/out" 2>&1; then
    echo "FAIL good request (--kv-dtype $kv) after the bad ones:"; sed 's/^/    /' "$work/out"; failures=$((failures + 1))
  fi
done
# Fewer blocks than ranks is no error: the surplus ranks hold empty shards.
checks=$((checks + 1))
if ! timeout 60 mpirun --oversubscribe --allow-run-as-root -np 3 "$star_run" "${m[@]}" --context-file "$work/context.txt" \
    --query "q" --attention star --block-size 100000 >"$work/out" 2>&1; then
  echo "FAIL one block on three ranks:"; sed 's/^/    /' "$work/out"; failures=$((failures + 1))
fi
echo "$((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
