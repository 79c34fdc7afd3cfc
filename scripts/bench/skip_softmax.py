#!/usr/bin/python3
"""Skip Softmax: skipped-tile fraction and attention-kernel speedup over dense, with `star-bench skip-softmax`.

For each prompt length L, prefill (a chunk of --prefill-queries query tokens at the end of the prompt,
the rows that see the most keys) and decode (one token), and each threshold_scale_factor S, the kernel
runs back to back with and without Skip Softmax; medians are reported. Inputs are synthetic and
peaked (an attention sink whose strength is --sink-strengths); each strength gives a different
skipped fraction for the same S. Writes skip_softmax.md (tables) and skip_softmax.png (speedup
against skipped fraction) to --out.

    scripts/bench/skip_softmax.py --build build --out bench-out
"""
import argparse
import os
import subprocess


def run(a, keys, queries, strength, repeats):
    cmd = [f"{a.build}/star-bench", "skip-softmax", "--keys", keys, "--queries", str(queries),
           "--scale-factors", a.scale_factors, "--sink-strength", str(strength), "--repeats", str(repeats)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].isdigit():
            rows.append({"keys": int(cells[0]), "S": float(cells[1]), "visited": int(cells[3]),
                         "skipped": int(cells[4]), "fraction": float(cells[5]) / 100, "dense_ms": float(cells[6]),
                         "sparse_ms": float(cells[7]), "speedup": float(cells[8])})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--keys", default="8192,16384,32768")
    ap.add_argument("--scale-factors", default="10,100,1000,10000")
    ap.add_argument("--sink-strengths", default="2.2,3")
    ap.add_argument("--prefill-queries", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    load = open("/proc/loadavg").read().split()[:3]
    results = []
    for phase, queries, repeats in (("prefill", a.prefill_queries, a.repeats), ("decode", 1, 4 * a.repeats)):
        for strength in (float(s) for s in a.sink_strengths.split(",")):
            for row in run(a, a.keys, queries, strength, repeats):
                results.append(dict(row, phase=phase, strength=strength))

    lines = [f"Load average at the start: {' '.join(load)} (`/proc/loadavg`); {os.cpu_count()} CPUs.", "",
             "| phase | sink strength | L | S | lambda | skipped / visited tiles | skipped % | dense ms | "
             "sparse ms | speedup |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['phase']} | {r['strength']:g} | {r['keys']} | {r['S']:g} | {r['S'] / r['keys']:.3g} | "
                     f"{r['skipped']} / {r['visited']} | {100 * r['fraction']:.1f} | {r['dense_ms']:.2f} | "
                     f"{r['sparse_ms']:.2f} | {r['speedup']:.2f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "skip_softmax.md"), "w") as f:
        f.write(table)
    print(table)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for phase, marker in (("prefill", "o"), ("decode", "s")):
        for keys in sorted({r["keys"] for r in results}):
            pts = [(r["fraction"], r["speedup"]) for r in results
                   if r["phase"] == phase and r["keys"] == keys and r["visited"] > 0]
            if pts:
                ax.scatter([p[0] * 100 for p in pts], [p[1] for p in pts], marker=marker,
                           label=f"{phase} L={keys // 1024}K")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(1.4, color="red", lw=0.8, ls="--", label="goal 1.4x")
    ax.axvline(60, color="red", lw=0.8, ls=":")
    ax.set_xlabel("skipped tiles (%)")
    ax.set_ylabel("attention kernel speedup over dense")
    ax.set_title("Skip Softmax, CPU kernel (back-to-back medians)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "skip_softmax.png"), dpi=120)


if __name__ == "__main__":
    main()
