#!/usr/bin/env bash
# star-eval end to end under mpirun: a tiny random model through two algorithms on 2 ranks writes
# its tasks, predictions, JSON and Markdown; the same command gives the same table; bad flags end
# with a message.
# usage: star_eval_end_to_end.sh STAR_EVAL STAR_MKMODEL
set -uo pipefail
star_eval=$1
mkmodel=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL $*"; exit 1; }
"$mkmodel" --out "$work/model" --preset tiny --seed 5 --max-positions 1024 >/dev/null || fail "star-mkmodel"

run() { timeout 300 mpirun --oversubscribe --allow-run-as-root -np 2 "$star_eval" --model "$work/model" "$@"; }
args=(--lengths 300,400 --tasks niah_single_1,niah_multikey_1 --algorithms dense,star --samples 2 --max-tokens 4)
run --out "$work/a" "${args[@]}" >"$work/a.log" 2>&1 || { cat "$work/a.log"; fail "first run"; }
run --out "$work/b" "${args[@]}" >"$work/b.log" 2>&1 || { cat "$work/b.log"; fail "second run"; }
for f in results.json results.md tasks/300.jsonl tasks/400.jsonl preds/400/dense.jsonl preds/400/star.jsonl; do
  [ -s "$work/a/$f" ] || fail "missing $f"
done
cmp -s "$work/a/results.md" "$work/b/results.md" || fail "the same command gave different tables"
cmp -s "$work/a/tasks/400.jsonl" "$work/b/tasks/400.jsonl" || fail "the same seed gave different tasks"
[ "$(wc -l <"$work/a/tasks/400.jsonl")" -eq 4 ] || fail "expected 2 tasks x 2 samples in tasks/400.jsonl"
cells=$(grep -c '"algorithm"' "$work/a/results.json")
[ "$cells" -ge 8 ] || fail "expected 2 lengths x 2 tasks x 2 algorithms cells, found $cells"
grep -q '| niah_single_1 |' "$work/a/results.md" || fail "no niah_single_1 row in results.md"
grep -q '"prompt_format": "chat"' "$work/a/results.json" || fail "the model's chat template was not the default prompt"
grep -q '"haystack": "debian"' "$work/a/results.json" || fail "the Debian text was not the default haystack"
grep -q '"ranks": 2' "$work/a/results.json" || fail "results.json does not record the 2 ranks"
grep -q '"usr/share/common-licenses/' "$work/a/results.json" || fail "results.json does not name the haystack files"
grep -Eq '"haystack_chars": [1-9][0-9]*' "$work/a/results.json" || fail "results.json does not count the haystack's prose"
echo "ok   two runs, identical tables"

# One run per column, merged by scripts/eval/merge_results.py, gives one run's tables and preds:
# on the trained needle model, whose scores differ by task and column (thirds, quarters, ties).
repo=$(cd "$(dirname "$0")/../.." && pwd)
merge=$repo/scripts/eval/merge_results.py
needle=(--model "$repo/models/needle-llama" --lengths 256,384 --tasks niah_single_1,niah_multikey_1,niah_multivalue,vt
        --samples 3 --max-tokens 12 --haystack generated --streaming-sink 4 --streaming-window 64)
nrun() { timeout 300 mpirun --oversubscribe --allow-run-as-root -np 2 "$star_eval" "${needle[@]}" "$@"; }
nrun --out "$work/whole" --algorithms dense,star,no-anchor,streaming >"$work/whole.log" 2>&1 ||
  { cat "$work/whole.log"; fail "needle run"; }
[ "$(grep -o '"score": [0-9.]*' "$work/whole/results.json" | sort -u | wc -l)" -ge 3 ] ||
  fail "the needle run's scores do not differ enough to test the merge"
for alg in streaming dense no-anchor star; do
  nrun --out "$work/split/$alg" --algorithms "$alg" >"$work/split.log" 2>&1 || { cat "$work/split.log"; fail "split $alg"; }
done
cp -r "$work/split/star" "$work/split/star-again"
/usr/bin/python3 "$merge" --out "$work/merged" --columns dense,star,no-anchor,streaming "$work/split" >/dev/null ||
  fail "merge_results.py"
cmp -s <(sed -n '/^###/,$p' "$work/whole/results.md") <(sed -n '/^###/,$p' "$work/merged/results.md") ||
  fail "merged tables differ from one run's: $(diff <(sed -n '/^###/,$p' "$work/whole/results.md") \
    <(sed -n '/^###/,$p' "$work/merged/results.md"))"
for f in preds/256/dense.jsonl preds/384/star.jsonl preds/384/streaming.jsonl; do
  cmp -s "$work/whole/$f" "$work/merged/$f" || fail "merged $f differs from one run's"
done
# Columns without dense merge too (their tables have no difference to dense).
/usr/bin/python3 "$merge" --out "$work/no-dense" --columns star,no-anchor "$work/split/star" "$work/split/no-anchor" \
  >"$work/no-dense.log" 2>&1 || { cat "$work/no-dense.log"; fail "merge_results.py without a dense column"; }
grep -q '^| \*\*mean\*\* |' "$work/no-dense/results.md" && ! grep -q 'difference to dense' "$work/no-dense/results.md" ||
  fail "the merge without dense lacks its mean row or has a difference table"
cmp -s "$work/whole/preds/384/star.jsonl" "$work/no-dense/preds/384/star.jsonl" || fail "merged star preds differ"
# A merged folder merges again, as the runs it holds: with the other two columns, one run's tables.
/usr/bin/python3 "$merge" --out "$work/remerged" --columns dense,star,no-anchor,streaming "$work/no-dense" \
  "$work/split/dense" "$work/split/streaming" >"$work/remerge.log" 2>&1 ||
  { cat "$work/remerge.log"; fail "merge_results.py of a merged folder"; }
cmp -s <(sed -n '/^###/,$p' "$work/whole/results.md") <(sed -n '/^###/,$p' "$work/remerged/results.md") ||
  fail "re-merged tables differ from one run's"
grep -q "merged from 4 star-eval runs" "$work/remerged/results.md" || fail "the re-merge does not count the runs it holds"
sed -i 's/"score": 1.0/"score": 0.5/' "$work/split/star-again/results.json"
if /usr/bin/python3 "$merge" --out "$work/bad-merge" "$work/split" >"$work/merge.log" 2>&1 ||
   ! grep -q "another folder has" "$work/merge.log"; then
  cat "$work/merge.log"
  fail "a cell scored differently by two folders was merged"
fi
mkdir -p "$work/other-ranks"
cp -r "$work/split/dense" "$work/other-ranks/dense"
cp -r "$work/split/star" "$work/other-ranks/star"
sed -i 's/"ranks": 2/"ranks": 3/' "$work/other-ranks/star/results.json"
if /usr/bin/python3 "$merge" --out "$work/bad-ranks" "$work/other-ranks" >"$work/ranks.log" 2>&1 ||
   ! grep -q "ranks is" "$work/ranks.log"; then
  cat "$work/ranks.log"
  fail "folders run on different rank counts were merged"
fi
echo "ok   runs per column merged equal one run; a conflicting cell and another rank count are refused"

# --algorithms none: only the --variants columns run.
echo '{"star-overlap8": {"algorithm": "star", "boundary_overlap": 8}}' >"$work/variants.json"
run --out "$work/v" --lengths 300 --tasks niah_single_1 --samples 1 --max-tokens 4 --algorithms none \
  --variants "$work/variants.json" >"$work/v.log" 2>&1 || { cat "$work/v.log"; fail "variants only"; }
[ "$(ls "$work/v/preds/300")" = "star-overlap8.jsonl" ] || fail "--algorithms none ran $(ls "$work/v/preds/300")"
echo "ok   --algorithms none runs the variants alone"

# --haystack-root: a copy of this machine's haystack files makes the same samples.
root="$work/root"
mkdir -p "$root/usr/share/common-licenses"
cp -L /usr/share/common-licenses/* "$root/usr/share/common-licenses/"
python_dir=$(dirname "$(ls -d /usr/lib/python3.*/argparse.py | sort -V | tail -1)")
mkdir -p "$root$python_dir"
cp -L "$python_dir"/*.py "$root$python_dir/"
run --out "$work/r" --haystack-root "$root" "${args[@]}" --tasks-only >"$work/r.log" 2>&1 || { cat "$work/r.log"; fail "--haystack-root"; }
cmp -s "$work/a/tasks/400.jsonl" "$work/r/tasks/400.jsonl" || fail "--haystack-root with the same files gave other tasks"
echo "ok   --haystack-root with a copy of the files gives the same tasks"

expect_failure() {
  local pattern=$1
  shift
  if run --out "$work/bad" --lengths 300 "$@" >"$work/bad.log" 2>&1 || ! grep -q -- "$pattern" "$work/bad.log"; then
    cat "$work/bad.log"
    fail "expected a message matching '$pattern'"
  fi
  echo "ok   $pattern"
}
expect_failure 'unknown task "niah_single_9"' --tasks niah_single_9
expect_failure 'unknown algorithm "sparse"' --algorithms dense,sparse
expect_failure 'no task fits 30 tokens' --lengths 30 --tasks niah_multiquery
expect_failure 'star-eval runs every algorithm of --algorithms' --attention star
expect_failure 'web not in {debian,generated}' --haystack web
expect_failure 'nothing to run' --algorithms none
expect_failure 'haystack-root .*: no Python standard library for the haystack' --haystack-root "$work" --tasks niah_single_2
expect_failure 'none stands alone' --algorithms none,dense
expect_failure 'only --haystack debian reads files' --haystack-root "$work" --haystack generated
expect_failure 'tpu not in {cpu,cuda}' --backend tpu
expect_failure 'lengths 1000 with --max-tokens 48 needs 1048 positions; the model has 1024 (use --lengths 976 or less)' --lengths 1000
