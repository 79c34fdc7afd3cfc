#!/usr/bin/env bash
# The main job on its built-in default: installs, builds, serves the project's retrieval-trained
# model (models/needle-llama, or $STAR_MODEL) with `mpirun -np 2 star-server` (Star Attention), asks
# for a needle hidden in a ~1,000-token haystack with star-client, prints the streamed answer, checks
# it and stops the server (SIGTERM to rank 0: every rank exits 0).
#
# It installs and builds only what it runs: the packages of `setup.sh --demo`, and star-server and
# star-client in Release in build-demo/ (no test suite; the CUDA backend only where `nvidia-smi -L`
# lists a GPU, or STAR_WITH_CUDA=ON asks for it; ccache where installed). scripts/build.sh still
# builds everything into build/.
#   STAR_DEMO_BIN=DIR   use star-server and star-client already built in DIR: no setup, no build
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${STAR_DEMO_BIN:-}"
if [ -z "$bin" ]; then
  scripts/setup.sh --demo
  cuda="${STAR_WITH_CUDA:-}"
  if [ -z "$cuda" ]; then
    cuda=OFF
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then cuda=AUTO; fi
  fi
  bin=build-demo
  cmake -S . -B "$bin" -DCMAKE_BUILD_TYPE=Release -DSTAR_BUILD_TESTS=OFF -DSTAR_SANITIZER_TESTS=OFF \
    -DSTAR_WITH_CUDA="$cuda" >/dev/null
  cmake --build "$bin" -j"$(nproc)" --target star-server star-client
fi
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
mpirun --oversubscribe --allow-run-as-root -np 2 "$bin/star-server" --model "$model" --grpc 127.0.0.1:0 \
  --port-file "$work/port" --attention star 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/server.log"; exit 1; }
server="127.0.0.1:$(sed -n 1p "$work/port")"
rank0_pid=$(sed -n 2p "$work/port")
until "$bin/star-client" --server "$server" health >/dev/null 2>&1; do sleep 0.1; done
echo "star-server (2 ranks) is serving on $server"

echo "question: the special magic number for lantern (the needle says 70349)"
"$bin/star-client" --server "$server" generate --context-file "$work/context.txt" \
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
