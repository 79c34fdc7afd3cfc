#!/usr/bin/env bash
# The main job on its built-in default: installs, builds, serves the project's retrieval-trained
# model (models/needle-llama, or $STAR_MODEL) with `mpirun -np 2 star-server` (Star Attention), asks
# for a needle hidden in a ~1,000-token haystack with star-client, prints the streamed answer, checks
# it and stops the server (SIGTERM to rank 0: every rank exits 0).
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
# The haystack is RULER's repeated noise; the needle sits 40% of the way in. Context and question
# follow the model's training text (scripts/train/retrieval_data.py).
noise=" The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
needle=" The special magic number for lantern is 70349."
{
  for i in $(seq 1 40); do
    [ "$i" -eq 17 ] && printf '%s' "$needle"
    printf '%s' "$noise"
  done
} >"$work/context.txt"
query=$'\nWhat is the special magic number for lantern? The special magic number for lantern is'

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

echo "question: the special magic number for lantern (the needle says 70349)"
build/star-client --server "$server" generate --context-file "$work/context.txt" \
  --query "$query" --max-tokens 8 --stats 2>&1 | tee "$work/answer.txt"
if grep -q "70349" "$work/answer.txt"; then
  echo "the answer is right"
else
  echo "the answer is wrong: the needle says 70349" >&2
  exit 1
fi

kill -TERM "$rank0_pid"
wait "$server_pid"
server_pid=""
echo "star-server stopped"
