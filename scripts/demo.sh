#!/usr/bin/env bash
# The main job on its built-in default: installs, builds, makes a model if none is given, and runs a
# long-context request on 2 MPI ranks with Star Attention.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
model="${STAR_MODEL:-build/demo-model}"
if [ ! -e "$model/config.json" ] && [ ! -f "$model" ]; then
  build/star-mkmodel --out "$model" --preset tiny --seed 1
fi
context=$(mktemp)
trap 'rm -f "$context"' EXIT
for i in $(seq 1 40); do echo "Line $i of the long context: the quick brown fox jumps over the lazy dog."; done >"$context"
mpirun --oversubscribe --allow-run-as-root -np 2 build/star-run --model "$model" \
  --context-file "$context" --query "What jumps over the dog?" --attention star --max-tokens 32
