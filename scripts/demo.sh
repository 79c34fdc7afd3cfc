#!/usr/bin/env bash
# The main job on a real model: installs, builds, fetches SmolLM2-135M-Instruct (scripts/fetch_models.sh),
# serves it with `mpirun -np 2 star-server --attention star` behind star-openai, and asks, through the
# official `openai` Python client, a question about the GNU GPL version 2 (/usr/share/common-licenses/GPL-2,
# on every Debian machine; about 4,000 of the model's tokens, half its 8K window). The document is the
# chat's system message, so it is the context Star Attention splits over the two ranks; the question is
# the query. The answer (the appendix's example program, Gnomovision) sits in the last ~300 tokens,
# so the rank holding the last block has to find it. It prints the answer, checks it and stops both
# servers (SIGTERM; each exits 0).
#
# It installs and builds only what it runs: the packages of `setup.sh --demo` (the openai client
# included), and star-server and star-openai in Release in build-demo/ (no test suite; the CUDA backend
# only where `nvidia-smi -L` lists a GPU, or STAR_WITH_CUDA=ON asks for it; ccache where installed).
# scripts/build.sh still builds everything into build/.
#   STAR_DEMO_BIN=DIR   use star-server and star-openai already built in DIR: no setup, no build
#   STAR_MODEL=FILE     another chat GGUF (the question and its check stay the same)
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
  cmake --build "$bin" -j"$(nproc)" --target star-server star-openai
fi
for tool in star-server star-openai; do
  [ -x "$bin/$tool" ] || { echo "demo: $bin/$tool is missing (build it, or unset STAR_DEMO_BIN)" >&2; exit 1; }
done
model="${STAR_MODEL:-}"
# Exit 77: a prerequisite (the model, the openai client) cannot be had here; ctest counts it a skip.
if [ -z "$model" ]; then
  model=$(scripts/fetch_models.sh) || { echo "demo: scripts/fetch_models.sh could not fetch SmolLM2" >&2; exit 77; }
fi
/usr/bin/python3 -c 'import openai' 2>/dev/null ||
  { echo "demo: the openai package is missing for /usr/bin/python3 (scripts/setup.sh --demo installs it)" >&2; exit 77; }
[ -s "$model" ] || { echo "demo: model file '$model' is missing or empty" >&2; exit 1; }
document=/usr/share/common-licenses/GPL-2
[ -s "$document" ] || { echo "demo: $document is missing (Debian's base-files package installs it)" >&2; exit 1; }

work=$(mktemp -d)
server_pid=""
shim_pid=""
cleanup() {
  if [ -n "$shim_pid" ] && kill -0 "$shim_pid" 2>/dev/null; then kill -TERM "$shim_pid"; fi
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -TERM "$server_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Waits for a --port-file; on a server that died first, prints its log and fails.
wait_for_port() {
  local file=$1 pid=$2 log=$3 name=$4
  for _ in $(seq 1 1200); do
    [ -s "$file" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "demo: $name did not start:" >&2
  cat "$log" >&2
  exit 1
}

# Port 0: each server takes a free port and writes it (and its pid) to --port-file.
mpirun --oversubscribe --allow-run-as-root -np 2 "$bin/star-server" --model "$model" --grpc 127.0.0.1:0 \
  --port-file "$work/server.port" --attention star 2>"$work/server.log" &
server_pid=$!
wait_for_port "$work/server.port" "$server_pid" "$work/server.log" star-server
backend="127.0.0.1:$(sed -n 1p "$work/server.port")"
rank0_pid=$(sed -n 2p "$work/server.port")
"$bin/star-openai" --backend "$backend" --listen 127.0.0.1:0 --port-file "$work/shim.port" 2>"$work/shim.log" &
shim_pid=$!
wait_for_port "$work/shim.port" "$shim_pid" "$work/shim.log" star-openai
base_url="http://127.0.0.1:$(sed -n 1p "$work/shim.port")/v1"
echo "star-server (2 ranks, star attention) on $backend; star-openai on $base_url"
echo "document: $document ($(wc -w <"$document") words)"

status=0
/usr/bin/python3 scripts/demo_ask.py --base-url "$base_url" --document "$document" \
  --question "What is the example program called in this license?" --expect "Gnomovision" || status=$?
if [ "$status" -eq 2 ]; then
  echo "server log:" >&2; cat "$work/server.log" >&2
  echo "star-openai log:" >&2; cat "$work/shim.log" >&2
fi

kill -TERM "$shim_pid"
wait "$shim_pid"
shim_pid=""
kill -TERM "$rank0_pid"
wait "$server_pid"
server_pid=""
echo "star-openai and star-server stopped"
exit "$status"
