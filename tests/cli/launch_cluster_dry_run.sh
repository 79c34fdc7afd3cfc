#!/usr/bin/env bash
# scripts/launch_cluster.sh --dry-run: the mpirun command it builds from a hostfile (ranks, one per
# GPU, NUMA binding, forwarded NCCL/UCX variables, the tool and its arguments) and its refusals.
# usage: launch_cluster_dry_run.sh LAUNCH_CLUSTER
set -uo pipefail
launch=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'gpu-a slots=8  # first node\n\n# a comment line\ngpu-b slots=8\ngpu-c\n' >"$work/hosts"

failures=0
check() {  # check NAME PATTERN: PATTERN (grep -E) must appear in $work/out
  if grep -qE -- "$2" "$work/out"; then echo "ok   $1"; else
    echo "FAIL $1: no match for '$2' in:"; sed 's/^/    /' "$work/out"; failures=$((failures + 1)); fi
}
refused() {  # refused NAME PATTERN ARGS...: exit 2 and PATTERN in the message
  local name=$1 pattern=$2
  shift 2
  "$launch" "$@" >"$work/out" 2>&1
  local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL $name: exit $rc, expected 2"; failures=$((failures + 1)); return; fi
  check "$name" "$pattern"
}

env -u NCCL_DEBUG NCCL_SOCKET_IFNAME=eth0 UCX_TLS=rc,sm,self STAR_LOG=debug UNRELATED_VAR=1 \
  "$launch" --hostfile "$work/hosts" --nodes 2 --gpus-per-node 4 --dry-run -- star-run --model m --query "two words" \
  >"$work/out" 2>&1
check "hosts of the first two nodes, 4 slots each" '--host gpu-a:4\\?,gpu-b:4 '
check "one rank per GPU" '-np 8 '
check "ranks spread per node and bound to NUMA" '--map-by ppr:4:node --bind-to numa'
check "NCCL, UCX and STAR variables forwarded" '-x NCCL_SOCKET_IFNAME .*-x STAR_LOG .*-x UCX_TLS'
if grep -q UNRELATED_VAR "$work/out"; then echo "FAIL other variables stay local"; failures=$((failures + 1)); fi
check "tool from the build folder, arguments kept" 'build/star-run --model m --query two\\ words$'

"$launch" --hostfile "$work/hosts" --gpus-per-node 2 --wrap "apptainer exec --nv s.sif" --dry-run -- /opt/tool -v \
  >"$work/out" 2>&1
check "every hostfile node by default" '--host gpu-a:2\\?,gpu-b:2\\?,gpu-c:2 -np 6 '
check "wrapper before the tool" 'apptainer exec --nv s.sif /opt/tool -v$'

refused "more nodes than the hostfile has" 'nodes must be in \[1, 3\]' --hostfile "$work/hosts" --nodes 4 --dry-run -- star-run
refused "no tool" 'no tool given' --hostfile "$work/hosts" --dry-run
refused "no hostfile" 'hostfile is required' --dry-run -- star-run
refused "unreadable hostfile" 'cannot read hostfile' --hostfile "$work/missing" -- star-run
refused "bad GPU count" 'gpus-per-node must be a positive number' --hostfile "$work/hosts" --gpus-per-node 0 -- star-run
printf '# only comments\n' >"$work/empty"
refused "hostfile without hosts" 'names no host' --hostfile "$work/empty" -- star-run

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
