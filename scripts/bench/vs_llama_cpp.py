#!/usr/bin/python3
"""Decode and prefill speed of starserve against llama.cpp on the same GGUF files, runs alternated.

Each round runs `star-bench model` and then `llama-bench` on one file (A B A B ...), so load that
comes and goes on a shared machine hits both alike; the table gives the median of the rounds and
the ratio of the medians. llama.cpp is built outside the repository (see the README's benchmark
section for the commit used).

    scripts/bench/vs_llama_cpp.py --star-bench build/star-bench \\
        --llama-bench /path/to/llama.cpp-build/bin/llama-bench --rounds 3 --threads 2 \\
        ~/.cache/starserve/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/small-q4_0.gguf

Prints one Markdown row a file, and the machine's load average before and after.
"""
import argparse
import os
import re
import statistics
import subprocess


def star_bench(binary, model, threads, prompt, decode):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([binary, "model", "--model", model, "--prompt-tokens", str(prompt),
                          "--decode-tokens", str(decode), "--repeats", "1"],
                         env=env, check=True, capture_output=True, text=True).stdout
    prefill = float(re.search(r"\| prefill \d+ tokens \| ([\d.]+) tokens/s", out).group(1))
    decoded = float(re.search(r"\| decode \d+ tokens \| ([\d.]+) tokens/s", out).group(1))
    return prefill, decoded


def llama_bench(binary, model, threads, prompt, decode):
    out = subprocess.run([binary, "-m", model, "-t", str(threads), "-p", str(prompt), "-n", str(decode),
                          "-r", "1", "-o", "csv"], check=True, capture_output=True, text=True).stdout
    rows = [line.split(",") for line in out.strip().splitlines()]
    header = [h.strip('"') for h in rows[0]]
    prefill = decoded = None
    for row in rows[1:]:
        fields = dict(zip(header, (v.strip('"') for v in row)))
        if int(fields["n_prompt"]) > 0:
            prefill = float(fields["avg_ts"])
        else:
            decoded = float(fields["avg_ts"])
    return prefill, decoded


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--star-bench", required=True)
    parser.add_argument("--llama-bench", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()

    print(f"load average before: {os.getloadavg()}")
    print(f"| file | decode starserve / llama.cpp tok/s | ratio | prefill {args.prompt_tokens} "
          f"starserve / llama.cpp tok/s | ratio |")
    print("|---|---|---|---|---|")
    for model in args.models:
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(star_bench(args.star_bench, model, args.threads, args.prompt_tokens, args.decode_tokens))
            theirs.append(llama_bench(args.llama_bench, model, args.threads, args.prompt_tokens, args.decode_tokens))
        our_prefill = statistics.median(p for p, _ in ours)
        our_decode = statistics.median(d for _, d in ours)
        their_prefill = statistics.median(p for p, _ in theirs)
        their_decode = statistics.median(d for _, d in theirs)
        print(f"| {os.path.basename(model)} | {our_decode:.1f} / {their_decode:.1f} | {our_decode / their_decode:.2f} "
              f"| {our_prefill:.1f} / {their_prefill:.1f} | {our_prefill / their_prefill:.2f} |", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
