#!/usr/bin/env bash
# The README's systemd recipe, without systemd: `systemctl stop` with KillMode=mixed and
# KillSignal=SIGUSR1 sends SIGUSR1 to mpirun alone (the unit's main process). mpirun forwards it to
# every rank; rank 0 lets the request in flight finish and stops the workers; every rank exits 0,
# then mpirun exits 0, within the drain time plus a few seconds, and no process is left.
# usage: stop_with_signal.sh STAR_SERVER STAR_CLIENT STAR_MKMODEL
set -uo pipefail
server=$1
client=$2
mkmodel=$3
work=$(mktemp -d)
mpirun_pid=""
client_pid=""
cleanup() {
  [ -n "$client_pid" ] && kill -KILL "$client_pid" 2>/dev/null
  [ -n "$mpirun_pid" ] && kill -KILL "$mpirun_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL $*"; sed 's/^/    server: /' "$work/server.log"; exit 1; }

"$mkmodel" --out "$work/model" --preset tiny --seed 9 >/dev/null || exit 1
mpirun --oversubscribe --allow-run-as-root -np 2 "$server" --model "$work/model" --grpc 127.0.0.1:0 \
  --port-file "$work/port" --shutdown-timeout 20 >"$work/server.log" 2>&1 &
mpirun_pid=$!
for _ in $(seq 1 600); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "star-server did not start"
address="127.0.0.1:$(sed -n 1p "$work/port")"
mapfile -t rank_pids < <(sed -n '2,$p' "$work/port")
until "$client" --server "$address" health >/dev/null 2>&1; do sleep 0.1; done

# A request in flight when the stop comes: it must still finish (the drain), not be cut.
"$client" --server "$address" generate --query "Tell a long story" --max-tokens 2000 --ignore-eos --stats \
  >"$work/answer.txt" 2>"$work/client.log" &
client_pid=$!
for _ in $(seq 1 300); do [ -s "$work/answer.txt" ] && break; sleep 0.05; done
[ -s "$work/answer.txt" ] || fail "the request did not start streaming"

start=$(date +%s.%N)
kill -USR1 "$mpirun_pid"
bound=30  # --shutdown-timeout 20, plus the stop itself
rc=""
for _ in $(seq 1 $((bound * 10))); do
  if ! kill -0 "$mpirun_pid" 2>/dev/null; then wait "$mpirun_pid"; rc=$?; break; fi
  sleep 0.1
done
seconds=$(echo "$(date +%s.%N) - $start" | bc)
[ -n "$rc" ] || fail "mpirun still runs ${bound} s after SIGUSR1"
mpirun_pid=""
echo "mpirun exited $rc, ${seconds} s after SIGUSR1"
[ "$rc" -eq 0 ] || fail "mpirun exited $rc, not 0"
for pid in "${rank_pids[@]}"; do
  kill -0 "$pid" 2>/dev/null && fail "rank pid $pid still runs"
done
wait "$client_pid"
client_rc=$?
client_pid=""
[ "$client_rc" -eq 0 ] || { cat "$work/client.log"; fail "the request in flight failed (star-client exit $client_rc)"; }
grep -q "finish length" "$work/client.log" || { cat "$work/client.log"; fail "the request in flight was cut"; }
echo "ok: the request in flight finished, every rank and mpirun exited 0, no process left"
