#!/usr/bin/env bash
# The CUDA backend is loaded only when --backend cuda asks for it (libstar_cuda_backend.so, dlopen):
#   1. star-run, star-server and star-bench need no CUDA library (ldd: their whole dependency tree);
#   2. CPU runs of star-run and star-bench load none either, dlopen included: glibc's loader log
#      (LD_DEBUG=libs) names every library a process initializes, whether it was linked or opened
#      later, with no sampling of /proc/<pid>/maps at the wrong moment;
#   3. the same log does show libcudart, cuBLAS, NCCL and the module for --backend cuda (so the
#      check in 2 can see them), and without a GPU the run stops with "backend cuda: ...", which
#      on a machine without an NVIDIA driver says that, not the runtime's "driver version is
#      insufficient";
#   4. a missing module, a library without the entry point and modules of another interface version
#      or layout are refused with a message naming the file and the reason.
# Without the CUDA backend in the build, 1 and 2 still hold and --backend cuda says so.
# usage: cuda_backend_on_demand.sh STAR_RUN STAR_BENCH STAR_SERVER STAR_MKMODEL [FAKE_VERSION FAKE_LAYOUT]
#   FAKE_*: modules posing as the backend with another interface version / layout fingerprint
#   (given where the build has the CUDA backend).
set -uo pipefail
star_run=$1
star_bench=$2
star_server=$3
mkmodel=$4
fake_version=${5:-}
fake_layout=${6:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mkmodel" --out "$work/model" --preset tiny --seed 5 >/dev/null || exit 1

cuda_libraries='lib(cudart|cublas|cublasLt|nccl|cuda)\.so|libstar_cuda_backend\.so'
failures=0
checks=0
pass() { echo "ok   $1"; }
fail() {
  echo "FAIL $1"
  [ $# -gt 1 ] && sed 's/^/    /' "$2" | tail -20
  failures=$((failures + 1))
}

# 1. Linked dependencies.
for binary in "$star_run" "$star_bench" "$star_server"; do
  checks=$((checks + 1))
  ldd "$binary" >"$work/ldd" 2>&1
  if ! grep -q 'libc\.so' "$work/ldd"; then
    fail "ldd $(basename "$binary") lists no libc (ldd failed?)" "$work/ldd"
  elif grep -Eq "$cuda_libraries" "$work/ldd"; then
    fail "$(basename "$binary") links a CUDA library:" <(grep -E "$cuda_libraries" "$work/ldd")
  else
    pass "$(basename "$binary") links no CUDA library"
  fi
done

# loaded NAME LOG COMMAND...: runs COMMAND with the loader's log in LOG (output in $work/out) and
# checks the log names the libraries this process initialized (libc at least).
loaded() {
  local name=$1 log=$2
  shift 2
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/ld" timeout 120 "$@" >"$work/out" 2>&1
  local rc=$?
  cat "$work"/ld.* >"$log" 2>/dev/null
  rm -f "$work"/ld.*
  if ! grep -q 'calling init: .*libc\.so' "$log"; then
    fail "$name: the loader log names no library (LD_DEBUG unsupported?)" "$work/out"
    return 2
  fi
  return $rc
}

# 2. CPU runs.
checks=$((checks + 1))
if loaded "star-run --backend cpu" "$work/run.log" "$star_run" --model "$work/model" --prompt "hello" \
    --max-tokens 4 --backend cpu; then
  if grep -Eq "calling init: .*($cuda_libraries)" "$work/run.log"; then
    fail "star-run --backend cpu loaded a CUDA library:" <(grep -E "calling init: .*($cuda_libraries)" "$work/run.log")
  else
    pass "star-run --backend cpu loads no CUDA library ($(grep -c 'calling init' "$work/run.log") libraries)"
  fi
else
  fail "star-run --backend cpu failed" "$work/out"
fi
checks=$((checks + 1))
if loaded "star-bench model" "$work/bench.log" "$star_bench" model --model "$work/model" --prompt-tokens 8 \
    --decode-tokens 2 --repeats 1; then
  if grep -Eq "calling init: .*($cuda_libraries)" "$work/bench.log"; then
    fail "star-bench model loaded a CUDA library:" <(grep -E "calling init: .*($cuda_libraries)" "$work/bench.log")
  else
    pass "star-bench model (cpu) loads no CUDA library"
  fi
else
  fail "star-bench model (cpu) failed" "$work/out"
fi

# 3. --backend cuda.
has_gpu=0
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && has_gpu=1
checks=$((checks + 1))
loaded "star-run --backend cuda" "$work/cuda.log" "$star_run" --model "$work/model" --prompt "hello" \
  --max-tokens 4 --backend cuda
rc=$?
if [ -z "$fake_version" ]; then
  if [ $rc -ne 0 ] && grep -q "this build has no CUDA backend" "$work/out"; then
    pass "star-run --backend cuda without the CUDA backend: $(grep -m1 'backend cuda' "$work/out")"
  else
    fail "star-run --backend cuda without the CUDA backend: exit $rc" "$work/out"
  fi
else
  missing=""
  for library in libstar_cuda_backend libcudart libcublas libcublasLt libnccl; do
    grep -Eq "calling init: .*/$library\.so" "$work/cuda.log" || missing+=" $library"
  done
  if [ -n "$missing" ]; then
    fail "star-run --backend cuda did not load:$missing" "$work/out"
  elif [ $has_gpu -eq 0 ] && { [ $rc -eq 0 ] || ! grep -q "backend cuda: no CUDA device" "$work/out"; }; then
    fail "star-run --backend cuda without a GPU: exit $rc, expected 'backend cuda: no CUDA device'" "$work/out"
  elif [ $has_gpu -eq 0 ] && ! grep -q 'calling init: .*/libcuda\.so\.1' "$work/cuda.log" &&
    ! grep -q "no NVIDIA driver: libcuda.so.1 cannot be loaded" "$work/out"; then
    # The loader initialized no libcuda.so.1: there is no driver, and the message must say so.
    fail "star-run --backend cuda without a driver: expected 'no NVIDIA driver: libcuda.so.1 cannot be loaded'" \
      "$work/out"
  else
    pass "star-run --backend cuda loads the module and the CUDA libraries (exit $rc)"
  fi

  # 4. Modules that must be refused, each beside a copy of star-run.
  # refused NAME LIBRARY PATTERN: star-run --backend cuda with LIBRARY as its module (none when
  # empty) exits non-zero with PATTERN in its output.
  refused() {
    local name=$1 library=$2 pattern=$3
    checks=$((checks + 1))
    rm -rf "$work/bin" && mkdir "$work/bin" && cp "$star_run" "$work/bin/"
    [ -n "$library" ] && cp "$library" "$work/bin/libstar_cuda_backend.so"
    timeout 60 "$work/bin/$(basename "$star_run")" --model "$work/model" --prompt "hello" --max-tokens 4 \
      --backend cuda >"$work/out" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -Eq -- "$pattern" "$work/out"; then
      pass "$name: $(grep -Em1 -- "$pattern" "$work/out")"
    else
      fail "$name: exit $rc, expected a message matching '$pattern'" "$work/out"
    fi
  }
  refused "missing module" "" "$work/bin/libstar_cuda_backend\.so: .*cannot open shared object file"
  refused "library without the entry point" "$(ldd "$star_run" | grep -Eo '/[^ ]*/libm\.so\.[0-9]+')" \
    "not a starserve CUDA backend \(no star_cuda_backend_entry\)"
  # The fake module claims the binary's interface version plus one.
  refused "module of another interface version" "$fake_version" "interface version [0-9]+, this binary needs [0-9]+"
  checks=$((checks + 1))
  read -r has needs < <(grep -Eo "interface version [0-9]+, this binary needs [0-9]+" "$work/out" | tr -cs '0-9' ' ')
  if [ -n "${needs:-}" ] && [ "$has" -eq $((needs + 1)) ]; then
    pass "the refused module's interface version is the binary's plus one ($has against $needs)"
  else
    fail "module of another interface version: expected the binary's version plus one in the message" "$work/out"
  fi
  refused "module of another layout" "$fake_layout" "built from other sources than this binary"
fi

echo "$((checks - failures)) passed, $failures failed"
[ $failures -eq 0 ]
