#!/usr/bin/python3
"""RocketKV decode speed and KV bytes per rank against no sparsity, with `star-bench rocket`.

For each preset (star-mkmodel --preset small / long), context length and plan (dense on one rank,
star on two), Phase 1 runs once; then the budgets (none, 256, 512, 2048) answer the same query in
rounds, back to back, and the median round is reported. Ranks run one thread each
(OMP_NUM_THREADS=1). Prints a Markdown table; writes the JSON rows to <out>/rocket_decode.json.

    scripts/bench/rocket_decode.py --build build --out bench-out --presets long --contexts 8192,16384,32768
"""
import argparse
import json
import os
import subprocess
import sys


def run(a, model, ranks, context, algorithm):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
           f"{a.build}/star-bench", "rocket", "--model", model, "--context", str(context),
           "--attention", algorithm, "--query", str(a.query), "--decode-tokens", str(a.decode_tokens),
           "--rounds", str(a.rounds), "--budgets", a.budgets]
    if algorithm != "dense":
        cmd += ["--block-size", str(-(-context // ranks))]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.strip().splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--presets", default="long,small")
    ap.add_argument("--contexts", default="8192,16384,32768")
    ap.add_argument("--plans", default="dense:1,star:2", help="algorithm:ranks pairs")
    ap.add_argument("--budgets", default="256,512,2048")
    ap.add_argument("--query", type=int, default=16)
    ap.add_argument("--decode-tokens", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    rows = []
    for preset in a.presets.split(","):
        model = os.path.join(a.out, f"{preset}-model")
        if not os.path.exists(os.path.join(model, "config.json")):
            subprocess.run([f"{a.build}/star-mkmodel", "--out", model, "--preset", preset, "--seed", "1"], check=True)
        for context in map(int, a.contexts.split(",")):
            for plan in a.plans.split(","):
                algorithm, ranks = plan.split(":")
                for r in run(a, model, int(ranks), context, algorithm):
                    r["preset"] = preset
                    rows.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
    with open(os.path.join(a.out, "rocket_decode.json"), "w") as f:
        json.dump(rows, f, indent=1)

    print("| preset | L | plan | budget | KV MiB per rank | decode ms/token | speedup |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        mib = " / ".join(f"{b / 2**20:.2f}" for b in r["shard_bytes"])
        print(f"| {r['preset']} | {r['context']} | {r['algorithm']} x{r['ranks']} | {r['budget']} | {mib} | "
              f"{r['decode_ms_per_token']:.2f} | {r['decode_speedup']:.2f}x |")


if __name__ == "__main__":
    main()
