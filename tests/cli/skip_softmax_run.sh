#!/usr/bin/env bash
# star-bench skip-softmax-run on a tiny random model, dense on one rank and star on two: one JSON line
# per S (S = 0 first); the kernel clock's prefill and decode tiles add up to the Phase 2 tiles the
# engine itself counted; S = 0 counts no tile; kernel times are reported for every S.
# usage: skip_softmax_run.sh STAR_BENCH STAR_MKMODEL MPIEXEC [MPIEXEC_FLAGS...]
set -uo pipefail
bench=$1 mkmodel=$2 mpiexec=$3
shift 3
mpi_flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mkmodel" --out "$work/model" --preset tiny --seed 3 >/dev/null || exit 1

failures=0
for plan in "1 --attention dense" "2 --attention star --block-size 600"; do
  set -- $plan
  ranks=$1
  shift
  OMP_NUM_THREADS=1 "$mpiexec" "${mpi_flags[@]}" -np "$ranks" "$bench" skip-softmax-run \
    --model "$work/model" --context 1200 --query 96 --decode-tokens 4 --rounds 1 --scale-factors 5,50 "$@" \
    >"$work/out" 2>"$work/err" || { echo "FAIL np $ranks: exit $?"; cat "$work/err"; failures=$((failures + 1)); continue; }
  /usr/bin/python3 - "$work/out" "$ranks" <<'PY' || failures=$((failures + 1))
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
ranks = int(sys.argv[2])
bad = []
if [r["S"] for r in rows] != [0, 5, 50]:
    bad.append(f"S values {[r['S'] for r in rows]}")
for r in rows:
    p, d, e = r["prefill_tiles"], r["decode_tiles"], r["engine_phase2_tiles"]
    if r["ranks"] != ranks:
        bad.append(f"S={r['S']}: ranks {r['ranks']}")
    if p["visited"] + d["visited"] != e["visited"] or p["skipped"] + d["skipped"] != e["skipped"]:
        bad.append(f"S={r['S']}: clock {p} + {d} != engine {e}")
    if r["S"] == 0 and (e["visited"] or r["prefill_speedup"] != 1.0):
        bad.append(f"S=0 counted tiles {e} or speedup {r['prefill_speedup']}")
    if r["S"] > 0 and p["visited"] == 0:
        bad.append(f"S={r['S']}: no prefill tile counted")
    if not (r["prefill_kernel_ms"] > 0 and r["decode_kernel_ms_per_token"] > 0 and r["phase1_kernel_s"] > 0):
        bad.append(f"S={r['S']}: a kernel time is missing")
for b in bad:
    print(f"FAIL np {ranks}: {b}")
print(f"ok   np {ranks}: {len(rows)} rows" if not bad else "")
sys.exit(1 if bad else 0)
PY
done
exit $((failures > 0))
