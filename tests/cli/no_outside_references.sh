#!/usr/bin/env bash
# Nothing in the repository may point to a file outside it: no design notes or papers kept beside the
# checkout (the project's own algorithm notes are docs/algorithms.md). Tests alone may read the
# shared test models, through STAR_SHARED_DIR (its default is set in CMakeLists.txt).
# usage: no_outside_references.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 2
self=tests/cli/no_outside_references.sh

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
  mapfile -t files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||')
fi

failures=0
report() {  # report WHAT MATCHES
  echo "FAIL $1:"
  sed 's/^/    /' <<<"$2"
  failures=$((failures + 1))
}

checked=()
for f in "${files[@]}"; do
  [ "$f" = "$self" ] && continue
  [ -f "$f" ] || continue
  grep -Iq . "$f" 2>/dev/null || continue  # binary files (models, images) cite nothing
  checked+=("$f")
done

design=$(grep -nE 'ALGORITHMS\.md|SPARSE\.md|STYLE\.md|shared/design|shared/papers|\.\./papers/|\.\./design/' \
  "${checked[@]}" 2>/dev/null)
[ -n "$design" ] && report "design notes or papers outside the repository (cite docs/ instead)" "$design"

shared=()
for f in "${checked[@]}"; do
  case "$f" in tests/* | CMakeLists.txt) continue ;; esac
  shared+=("$f")
done
outside=$(grep -nE '\.\./shared|/work/' "${shared[@]}" 2>/dev/null)
[ -n "$outside" ] && report "paths outside the repository (only tests may read STAR_SHARED_DIR)" "$outside"

echo "${#checked[@]} files checked, $failures problems"
[ $failures -eq 0 ]
