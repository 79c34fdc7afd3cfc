#!/usr/bin/env bash
# The main job on its built-in default: installs, builds, makes a model if none is given, serves it
# with `mpirun -np 2 star-server` (Star Attention), asks a long-context question with star-client,
# prints the streamed answer and stops the server (SIGTERM to rank 0: every rank exits 0).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
model="${STAR_MODEL:-build/demo-model}"
if [ ! -e "$model/config.json" ] && [ ! -f "$model" ]; then
  build/star-mkmodel --out "$model" --preset tiny --seed 1
fi
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -TERM "$server_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT
for i in $(seq 1 40); do echo "Line $i of the long context: the quick brown fox jumps over the lazy dog."; done >"$work/context.txt"

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

build/star-client --server "$server" generate --context-file "$work/context.txt" \
  --query "What jumps over the dog?" --max-tokens 32 --stats

kill -TERM "$rank0_pid"
wait "$server_pid"
server_pid=""
echo "star-server stopped"
