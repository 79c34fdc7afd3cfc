#!/usr/bin/env bash
# Launches a starserve tool across GPU nodes with Open MPI: one rank per GPU, each rank bound to the
# NUMA domain of its cores; the rank itself then drives the GPU of its local rank (NcclCommunicator
# picks device = index among the ranks on its host), so CUDA_VISIBLE_DEVICES stays untouched.
#
#   scripts/launch_cluster.sh --hostfile hosts.txt [--gpus-per-node N] [--nodes N]
#                             [--wrap "apptainer exec --nv star.sif"] [--dry-run] -- TOOL [ARGS...]
#
#   TOOL       star-server, star-run or star-bench (looked up in $STAR_BIN_DIR, default ./build),
#              or a path. ARGS go to the tool unchanged: give it --backend cuda to use the GPUs.
#   hostfile   one node per line, Open MPI syntax ("gpu-node-01 slots=8"); '#' starts a comment.
#              Only the names are read: ranks per node come from --gpus-per-node.
#   --nodes    use the first N nodes of the hostfile (default: all of them).
#   --gpus-per-node  ranks per node (default: what nvidia-smi -L counts here, else 1).
#   --wrap     a command each rank runs the tool through (a container runtime, numactl, nsys ...).
#   --dry-run  print the mpirun command instead of running it.
#
# Environment passed to every rank (-x) when set here; the usual knobs:
#   NCCL_SOCKET_IFNAME   interface(s) for NCCL's bootstrap and socket transport, e.g. "eth0" or
#                        "^lo,docker" (exclude). Set it on hosts with several NICs.
#   NCCL_IB_HCA          InfiniBand / RoCE adapters to use, e.g. "mlx5_0,mlx5_1" (or "^mlx5_2").
#   NCCL_IB_DISABLE=1    force TCP sockets (no RDMA), for debugging.
#   NCCL_NET_GDR_LEVEL   how close NIC and GPU must be for GPUDirect RDMA (e.g. PHB, SYS).
#   NCCL_P2P_LEVEL / NCCL_P2P_DISABLE   intra-node GPU peer-to-peer (NVLink / PCIe) policy.
#   NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET)   print the chosen transports at start.
#   UCX_TLS              UCX transports for MPI traffic, e.g. "rc,sm,self" (InfiniBand) or
#                        "tcp,sm,self"; UCX_NET_DEVICES picks ports ("mlx5_0:1").
#   OMPI_MCA_btl_tcp_if_include / OMPI_MCA_oob_tcp_if_include   Open MPI's TCP interfaces.
#   STAR_* and CUDA_* variables are forwarded as well (CUDA_DEVICE_ORDER=PCI_BUS_ID keeps device
#   numbers in nvidia-smi's order).
# MPI only carries the bootstrap, the request text and tokens; Phase 2's (out, lse) all-gather and
# other device traffic go through NCCL.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

hostfile="" gpus_per_node="" nodes="" wrap="" dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile) hostfile="${2:?--hostfile needs a file}"; shift 2 ;;
    --gpus-per-node) gpus_per_node="${2:?--gpus-per-node needs a number}"; shift 2 ;;
    --nodes) nodes="${2:?--nodes needs a number}"; shift 2 ;;
    --wrap) wrap="${2:?--wrap needs a command}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage 0 ;;
    --) shift; break ;;
    *) echo "launch_cluster: unknown option '$1' (the tool and its arguments come after --)" >&2; usage ;;
  esac
done
[ $# -ge 1 ] || { echo "launch_cluster: no tool given after --" >&2; usage; }
[ -n "$hostfile" ] || { echo "launch_cluster: --hostfile is required" >&2; usage; }
[ -r "$hostfile" ] || { echo "launch_cluster: cannot read hostfile '$hostfile'" >&2; exit 2; }

# Nodes: the hostfile's non-empty, non-comment lines, the first --nodes of them.
mapfile -t hosts < <(sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e '/^$/d' "$hostfile" | awk '{print $1}')
[ ${#hosts[@]} -gt 0 ] || { echo "launch_cluster: hostfile '$hostfile' names no host" >&2; exit 2; }
nodes="${nodes:-${#hosts[@]}}"
if ! [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || [ "$nodes" -gt ${#hosts[@]} ]; then
  echo "launch_cluster: --nodes must be in [1, ${#hosts[@]}] (the hostfile's hosts), got '$nodes'" >&2
  exit 2
fi
if [ -z "$gpus_per_node" ]; then
  gpus_per_node=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU ' || true)
  [ "$gpus_per_node" -gt 0 ] || gpus_per_node=1
fi
if ! [[ "$gpus_per_node" =~ ^[1-9][0-9]*$ ]]; then
  echo "launch_cluster: --gpus-per-node must be a positive number, got '$gpus_per_node'" >&2
  exit 2
fi
ranks=$((nodes * gpus_per_node))
host_list=$(printf '%s\n' "${hosts[@]:0:$nodes}" | sed "s/\$/:$gpus_per_node/" | paste -sd, -)

tool="$1"; shift
if [[ "$tool" != */* ]]; then tool="${STAR_BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}/$tool"; fi
if [ $dry_run -eq 0 ] && [ -z "$wrap" ] && [ ! -x "$tool" ]; then
  echo "launch_cluster: '$tool' is not an executable (build it, or set STAR_BIN_DIR)" >&2
  exit 2
fi

cmd=(mpirun --host "$host_list" -np "$ranks"
     --map-by "ppr:${gpus_per_node}:node" --bind-to numa --report-bindings)
if [ "$(id -u)" -eq 0 ]; then cmd+=(--allow-run-as-root); fi
while IFS='=' read -r name _; do
  case "$name" in NCCL_*|UCX_*|OMPI_MCA_*|STAR_*|CUDA_*) cmd+=(-x "$name") ;; esac
done < <(env | LC_ALL=C sort)
if [ -n "$wrap" ]; then read -r -a wrap_words <<<"$wrap"; cmd+=("${wrap_words[@]}"); fi
cmd+=("$tool" "$@")

if [ $dry_run -eq 1 ]; then
  printf '%q' "${cmd[0]}"; printf ' %q' "${cmd[@]:1}"; echo
  exit 0
fi
echo "launch_cluster: $ranks ranks on $nodes node(s), $gpus_per_node per node" >&2
exec "${cmd[@]}"
