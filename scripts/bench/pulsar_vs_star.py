#!/usr/bin/python3
"""Phase 1 per rank, star against pulsar (and the cost model's prediction), with `star-bench phase`.

Default: the attention-dominated `long` star-mkmodel preset, 4 ranks, 16K and 32K contexts, pulsar
with 512 summary tokens per block. Each rank runs one thread; Phase 1 time is CPU seconds of model
work and memory is each rank's peak RSS. Prints a Markdown table and writes a PNG.

    scripts/bench/pulsar_vs_star.py --build build --out bench-out
"""
import argparse
import json
import os
import subprocess


def run(a, model, context, algorithm):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(a.ranks), f"{a.build}/star-bench", "phase",
           "--model", model, "--context", str(context), "--attention", algorithm,
           "--block-size", str(-(-context // a.ranks)), "--query", "8", "--decode-tokens", "2"]
    if algorithm == "pulsar":
        cmd += ["--summary-tokens", str(a.summary_tokens)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def plan(a, model, context, algorithm):
    cmd = [f"{a.build}/star-bench", "plan", "--config", os.path.join(model, "config.json"), "--ranks", str(a.ranks),
           "--context", str(context), "--attention", algorithm]
    if algorithm == "pulsar":
        cmd += ["--summary-tokens", str(a.summary_tokens)]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", help="model directory (default: star-mkmodel --preset long)")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--contexts", default="16384,32768")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--summary-tokens", type=int, default=512)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model = a.model or os.path.join(a.out, "long-model")
    if not a.model and not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([f"{a.build}/star-mkmodel", "--out", model, "--preset", "long", "--seed", "1"], check=True)

    rows = {}
    for context in map(int, a.contexts.split(",")):
        for algorithm in ("star", "pulsar"):
            rows[(context, algorithm)] = run(a, model, context, algorithm)
    with open(os.path.join(a.out, "pulsar_vs_star.json"), "w") as f:
        json.dump({f"{k[0]}:{k[1]}": v for k, v in rows.items()}, f, indent=1)

    print(f"| L | algorithm | slowest rank Phase 1 (CPU s) | per rank (s) | peak RSS per rank (MiB) | star / pulsar |")
    print("|---|---|---|---|---|---|")
    for (context, algorithm), r in rows.items():
        star = rows[(context, "star")]["phase1_critical_path_s"]
        ratio = f'{star / r["phase1_critical_path_s"]:.2f}x' if algorithm == "pulsar" else ""
        per_rank = ", ".join(f"{x:.2f}" for x in r["phase1_rank_compute_s"])
        rss = ", ".join(f"{x:.0f}" for x in r["peak_rss_mib"])
        print(f'| {context} | {algorithm} | {r["phase1_critical_path_s"]:.2f} | {per_rank} | {rss} | {ratio} |')
    print()
    print("cost model for this model (star-bench plan):")
    for context in map(int, a.contexts.split(",")):
        print(plan(a, model, context, "pulsar"))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    contexts = sorted({k[0] for k in rows})
    fig, axes = plt.subplots(1, len(contexts), figsize=(6 * len(contexts), 4), squeeze=False)
    for ax, context in zip(axes[0], contexts):
        for i, algorithm in enumerate(("star", "pulsar")):
            vals = rows[(context, algorithm)]["phase1_rank_compute_s"]
            ax.bar([r + 0.4 * i for r in range(len(vals))], vals, width=0.4, label=algorithm)
        ax.set(xlabel="rank", ylabel="Phase 1 CPU seconds", title=f"L = {context}, {a.ranks} ranks")
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "pulsar_vs_star.png"), dpi=120)
    print(f"plot: {os.path.join(a.out, 'pulsar_vs_star.png')}")


if __name__ == "__main__":
    main()
