#!/usr/bin/python3
"""Skip Softmax and RocketKV inside model runs of the `long` and `small` presets: one table and a plot.

Skip Softmax (`star-bench skip-softmax-run`): per preset, prompt length L and plan (dense on one
rank, star on two), Phase 1 encodes L - chunk random tokens once, dense; then every S (0 first, the
dense kernel) answers the same query of --chunk tokens, the prefill chunk at the end of the prompt
(the rows that see the most keys), and decodes --decode-tokens tokens, in rounds, back to back; the
medians are kept. Attention time is the time inside the CPU attention kernel (the slowest rank's),
apart from the model's matmuls; tiles are every rank's.

RocketKV (`star-bench rocket`, as scripts/bench/rocket_decode.py): KV bytes per rank and decode
ms/token for each prompt budget against no sparsity.

Models come from `star-mkmodel --preset NAME --seed 1` (float32 weights, random: the attention
fractions are those of random weights, not of a trained model), or, for names given with --models,
from a file (a trained model: SmolLM2-135M-Instruct's GGUF). Ranks run one thread each.
Every measurement is appended to <out>/sparse_presets.jsonl as it finishes, so a run cut short keeps
what it measured and later runs add to it; the Markdown table (sparse_presets.md) and the plot
(sparse_presets.png: speedup against skipped fraction) are made from all rows there.

    scripts/bench/sparse_presets.py --build build --out bench-out                  # everything
    scripts/bench/sparse_presets.py --parts skip --presets long --contexts 8192    # a part of it
    scripts/bench/sparse_presets.py --report-only --out bench-out                  # tables and plot
"""
import argparse
import json
import os
import subprocess
import sys


def mpirun(ranks, args):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)] + args
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def plan_flags(a, preset, algorithm, ranks, context):
    """The Phase 1 plan: dense, or star with one block per rank. --cheap-phase1 PRESET:BLOCK makes
    that preset's KV with star blocks of BLOCK tokens on every plan (the row then says star x1 for
    one rank, whose Phase 2 attends the whole context as dense's does)."""
    block = dict(p.split(":") for p in a.cheap_phase1.split(",") if p).get(preset)
    if block:
        return ["--attention", "star", "--block-size", block]
    if algorithm == "dense":
        return ["--attention", "dense"]
    return ["--attention", algorithm, "--block-size", str(-(-context // ranks))]


def load():
    return "/".join(open("/proc/loadavg").read().split()[:3])


def measure(a, out_file):
    given = dict(m.split("=", 1) for m in a.models.split(",") if m)
    for preset in a.presets.split(","):
        model = os.path.expanduser(given.get(preset, os.path.join(a.out, f"{preset}-model")))
        if preset not in given and not os.path.exists(os.path.join(model, "config.json")):
            subprocess.run([f"{a.build}/star-mkmodel", "--out", model, "--preset", preset, "--seed", "1"], check=True)
        for length in map(int, a.contexts.split(",")):
            for plan in a.plans.split(","):
                algorithm, ranks = plan.split(":")
                ranks = int(ranks)
                if "skip" in a.parts:
                    context = length - a.chunk
                    load_before = load()
                    rows = mpirun(ranks, [f"{a.build}/star-bench", "skip-softmax-run", "--model", model,
                                          "--context", str(context), "--query", str(a.chunk),
                                          "--decode-tokens", str(a.decode_tokens), "--rounds", str(a.rounds),
                                          "--scale-factors", a.scale_factors]
                                  + plan_flags(a, preset, algorithm, ranks, context))
                    flags = plan_flags(a, preset, algorithm, ranks, context)
                    for r in rows:
                        r.update(part="skip", preset=preset, length=length, phase1_plan=" ".join(flags),
                                 load=f"{load_before} .. {load()}")
                        emit(out_file, r)
                if "rocket" in a.parts:
                    load_before = load()
                    rows = mpirun(ranks, [f"{a.build}/star-bench", "rocket", "--model", model,
                                          "--context", str(length), "--query", str(a.rocket_query),
                                          "--decode-tokens", str(a.rocket_decode_tokens),
                                          "--rounds", str(a.rounds), "--budgets", a.budgets]
                                  + plan_flags(a, preset, algorithm, ranks, length))
                    flags = plan_flags(a, preset, algorithm, ranks, length)
                    for r in rows:
                        r.update(part="rocket", preset=preset, length=length, phase1_plan=" ".join(flags),
                                 load=f"{load_before} .. {load()}")
                        emit(out_file, r)


def emit(out_file, row):
    with open(out_file, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), file=sys.stderr, flush=True)


def length_name(r):
    return f"{r['length'] // 1024}K" if r["length"] % 1024 == 0 else f"{r['length']:,}"


def skipped(r, tiles):
    """The skipped percentage, or why there is none: S = 0, or lambda = S / L >= 1 in every call."""
    if r["S"] == 0:
        return "dense"
    if tiles["visited"] == 0:
        return "off (λ ≥ 1)"
    return f"{100 * tiles['fraction']:.1f}"


def plan_name(r):
    if r["part"] == "skip" and "--block-size" in r["phase1_plan"]:
        return f"{r['ranks']} rank{'s' if r['ranks'] > 1 else ''}, {r['blocks']} blocks"
    return f"{r['algorithm']} x{r['ranks']}"


def report(a, out_file):
    rows = [json.loads(line) for line in open(out_file)] if os.path.exists(out_file) else []
    # A later measurement of the same cell replaces an earlier one.
    cells = {}
    for r in rows:
        key = (r["part"], r["preset"], r["length"], plan_name(r), r.get("S", r.get("budget")))
        cells[key] = r
    skip = [r for k, r in cells.items() if k[0] == "skip"]
    rocket = [r for k, r in cells.items() if k[0] == "rocket"]
    order = lambda r: (r["preset"], r["length"], plan_name(r), float(r.get("S", 0)))

    md = ["Written by scripts/bench/sparse_presets.py from every row of sparse_presets.jsonl; how to read it: "
          "docs/sparse-attention.md (Skip Softmax) and docs/rocket-benchmark.md (RocketKV).", "",
          "## Skip Softmax in model runs", "",
          "Prefill: the last chunk of the prompt (`query` tokens) against every earlier key; decode: each "
          "generated token. Kernel ms: time inside the CPU attention kernel, slowest rank, median over "
          "rounds; skipped: skipped / visited (vote group x key tile) pairs, every rank.", "",
          "| preset | L | plan | S | prefill skipped % | prefill kernel ms | prefill speedup | "
          "decode skipped % | decode kernel ms/token | decode speedup | load |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(skip, key=order):
        p, d = r["prefill_tiles"], r["decode_tiles"]
        md.append(f"| {r['preset']} | {length_name(r)} | {plan_name(r)} | {r['S']:g} | "
                  f"{skipped(r, p)} | {r['prefill_kernel_ms']:.1f} | {r['prefill_speedup']:.2f}x | "
                  f"{skipped(r, d)} | {r['decode_kernel_ms_per_token']:.2f} | {r['decode_speedup']:.2f}x | "
                  f"{r['load']} |")
    md += ["", "## RocketKV", "",
           "| preset | L | plan | budget | KV MiB per rank | decode ms/token | speedup | load |",
           "|---|---|---|---|---|---|---|---|"]
    budget_order = lambda r: (r["preset"], r["length"], plan_name(r), 0 if r["budget"] == "none" else r["budget"])
    for r in sorted(rocket, key=budget_order):
        mib = " / ".join(f"{b / 2**20:.2f}" for b in r["shard_bytes"])
        md.append(f"| {r['preset']} | {length_name(r)} | {plan_name(r)} | {r['budget']} | {mib} | "
                  f"{r['decode_ms_per_token']:.2f} | {r['decode_speedup']:.2f}x | {r['load']} |")
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "sparse_presets.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "sparse_presets.json"), "w") as f:
        json.dump(sorted(cells.values(), key=lambda r: (r["part"],) + budget_order(r) if r["part"] == "rocket"
                         else (r["part"],) + order(r)), f, indent=1)
    print(text)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5.2))
    palette = plt.get_cmap("tab20")
    markers = {"prefill": "o", "decode": "s"}
    colors = {}
    for r in sorted(skip, key=order):
        if r["S"] == 0:
            continue
        label_key = f"{r['preset']} {length_name(r)} {plan_name(r)}"
        color = colors.setdefault(label_key, palette(len(colors) % 20))
        for phase in ("prefill", "decode"):
            t = r[f"{phase}_tiles"]
            if t["visited"] == 0:
                continue
            ax.scatter(100 * t["fraction"], r[f"{phase}_speedup"], marker=markers[phase], color=color,
                       facecolors="none" if phase == "decode" else color)
    for key, color in colors.items():
        ax.scatter([], [], marker="o", color=color, label=key)
    ax.scatter([], [], marker="o", color="k", label="prefill chunk (filled)")
    ax.scatter([], [], marker="s", facecolors="none", color="k", label="decode (open)")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(1.4, color="red", lw=0.8, ls="--", label="goal 1.4x")
    ax.axvline(60, color="red", lw=0.8, ls=":")
    ax.set_xlabel("skipped tiles (%)")
    ax.set_ylabel("attention-kernel speedup over S = 0")
    ax.set_title("Skip Softmax in model runs: attention-kernel time (CPU)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "sparse_presets.png"), dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--parts", default="skip,rocket")
    ap.add_argument("--presets", default="long,small")
    ap.add_argument("--models", default="", help="NAME=PATH pairs: a model file to use for NAME in --presets "
                    "instead of star-mkmodel's preset (a trained model, e.g. SmolLM2's GGUF)")
    ap.add_argument("--contexts", default="8192,16384,32768", help="prompt lengths L")
    ap.add_argument("--plans", default="dense:1,star:2", help="algorithm:ranks pairs")
    ap.add_argument("--cheap-phase1", default="", help="preset:block pairs: encode that preset's context as star "
                    "blocks of this size on every plan (where a full Phase 1 does not fit the machine)")
    ap.add_argument("--scale-factors", default="10,100,1000,10000")
    ap.add_argument("--chunk", type=int, default=512, help="prefill chunk: query tokens at the end of the prompt")
    ap.add_argument("--decode-tokens", type=int, default=8)
    ap.add_argument("--budgets", default="256,512,2048")
    ap.add_argument("--rocket-query", type=int, default=16)
    ap.add_argument("--rocket-decode-tokens", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out_file = os.path.join(a.out, "sparse_presets.jsonl")
    if not a.report_only:
        measure(a, out_file)
    report(a, out_file)


if __name__ == "__main__":
    main()
