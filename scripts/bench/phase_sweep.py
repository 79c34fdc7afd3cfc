#!/usr/bin/python3
"""Sweeps Phase 1 / Phase 2 over context lengths, rank counts and algorithms with `star-bench phase`.

Each rank runs one thread (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1) and Phase 1 is reported in CPU
seconds of model work, so ranks oversubscribed on a small machine report the work they did; the
critical path is the slowest rank's. Prints a Markdown table and writes a PNG plot.

    scripts/bench/phase_sweep.py --build build --out bench-out
"""
import argparse
import json
import os
import subprocess
import sys


def run_phase(a, model, ranks, context, algorithm):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    block = -(-context // ranks)
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
           f"{a.build}/star-bench", "phase", "--model", model, "--context", str(context),
           "--attention", algorithm, "--query", str(a.query), "--decode-tokens", str(a.decode_tokens)]
    if algorithm != "dense":
        cmd += ["--block-size", str(block)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", help="model directory (default: star-mkmodel --preset long)")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--contexts", default="2048,4096,8192,16384,32768")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--algorithms", default="dense,ring,star")
    ap.add_argument("--query", type=int, default=16)
    ap.add_argument("--decode-tokens", type=int, default=16)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model = a.model or os.path.join(a.out, "long-model")
    if not a.model and not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([f"{a.build}/star-mkmodel", "--out", model, "--preset", "long", "--seed", "1"], check=True)

    rows = []
    for context in map(int, a.contexts.split(",")):
        for ranks in map(int, a.ranks.split(",")):
            for algorithm in a.algorithms.split(","):
                if algorithm == "dense" and ranks > 1:
                    continue  # dense encodes on one rank whatever the count
                r = run_phase(a, model, ranks, context, algorithm)
                rows.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    with open(os.path.join(a.out, "phase_sweep.json"), "w") as f:
        json.dump(rows, f, indent=1)

    print("| L | ranks | algorithm | Phase 1 critical path (s) | vs ring | Phase 2 ms/token | bytes/decode step | gather+merge share |")
    print("|---|---|---|---|---|---|---|---|")
    ring = {(r["context"], r["ranks"]): r["phase1_critical_path_s"] for r in rows if r["algorithm"] == "ring"}
    for r in rows:
        base = ring.get((r["context"], r["ranks"]))
        rel = f'{r["phase1_critical_path_s"] / base:.2f}x' if base else "-"
        print(f'| {r["context"]} | {r["ranks"]} | {r["algorithm"]} | {r["phase1_critical_path_s"]:.2f} | {rel} | '
              f'{r["decode_ms_per_token"]:.1f} | {r["bytes_sent_per_decode_step"]:.0f} | '
              f'{100 * r["gather_merge_fraction_of_decode"]:.1f}% |')

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for (algorithm, ranks) in sorted({(r["algorithm"], r["ranks"]) for r in rows}):
        pts = sorted((r["context"], r["phase1_critical_path_s"], r["decode_ms_per_token"]) for r in rows
                     if r["algorithm"] == algorithm and r["ranks"] == ranks)
        label = f"{algorithm}, {ranks} rank{'s' if ranks > 1 else ''}"
        axes[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        axes[1].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=label)
    axes[0].set(xscale="log", yscale="log", xlabel="context tokens", ylabel="Phase 1 critical path (CPU s)",
                title="Phase 1: slowest rank's compute")
    axes[1].set(xscale="log", xlabel="context tokens", ylabel="ms per generated token", title="Phase 2 decode")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "phase_sweep.png"), dpi=120)
    print(f"plot: {os.path.join(a.out, 'phase_sweep.png')}")


if __name__ == "__main__":
    main()
