#!/usr/bin/env bash
# The main job on its built-in default: installs, builds, serves the committed retrieval model
# (models/needle-llama, or $STAR_MODEL) with `mpirun -np 2 star-server` (Star Attention), asks for a
# needle hidden in a ~1,000-token haystack with star-client, prints the streamed answer next to the
# expected one and stops the server (SIGTERM to rank 0: every rank exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
model="${STAR_MODEL:-models/needle-llama}"
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -TERM "$server_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT
# RULER's noise haystack with one needle a third of the way in: block 0 (rank 0) holds the needle,
# block 1 (rank 1) the end of the text.
noise=" The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
{
  for _ in $(seq 1 14); do printf '%s' "$noise"; done
  printf '%s' " The special magic number for tiger is 48151."
  for _ in $(seq 1 26); do printf '%s' "$noise"; done
} >"$work/context.txt"

# Port 0: the server takes a free port and writes it (and rank 0's pid) to --port-file.
mpirun --oversubscribe --allow-run-as-root -np 2 build/star-server --model "$model" --grpc 127.0.0.1:0 \
  --port-file "$work/port" --attention star 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/server.log"; exit 1; }
server="127.0.0.1:$(sed -n 1p "$work/port")"
rank0_pid=$(sed -n 2p "$work/port")
until build/star-client --server "$server" health >/dev/null 2>&1; do sleep 0.1; done
echo "star-server (2 ranks) is serving on $server"

echo "question: What is the special magic number for tiger? (expected: 48151)"
build/star-client --server "$server" generate --context-file "$work/context.txt" \
  --query $'\nWhat is the special magic number for tiger? The special magic number for tiger is' \
  --max-tokens 16 --stats

kill -TERM "$rank0_pid"
wait "$server_pid"
server_pid=""
echo "star-server stopped"
