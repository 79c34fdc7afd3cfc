#!/usr/bin/python3
"""star-bench against llama.cpp's llama-bench on the same GGUF files: prefill and decode tokens/s
and peak RSS, runs alternated (starserve, llama.cpp, starserve, ...), medians.

    scripts/bench/vs_llamacpp.py --llama-cpp-dir <llama.cpp build directory>
    scripts/bench/vs_llamacpp.py --models small --dtypes q4_0 q4_k_m --tests decode --repeats 3

Model files: SmolLM2-135M-Instruct Q4_1 (scripts/fetch_models.sh puts it in ~/.cache/starserve/),
and the `small` preset and a Llama-3.2-1B-shaped model (dim 2048, 16 layers, 32/8 heads, FFN 8192,
vocab 128256, tied) written by star-mkmodel as GGUF of each --dtypes into --cache (made once, kept).

Tests: pp512 and pp2048 (prefill of that many tokens, llama-bench -p N -n 0; star-bench
--prompt-tokens N --decode-tokens 1) and decode (llama-bench -n N -p 0, star-bench
--prompt-tokens 1 --decode-tokens N: both decode from an empty context).

Peak RSS: llama-bench's from wait4's rusage (its whole process); star-bench's is the value it prints,
taken after prefill and decode and before its machine-rate measurements allocate buffers of their
own. Prints a Markdown table; writes a PNG of the ratios when matplotlib is installed.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAPES = {
    "small": ["--preset", "small"],
    "1b": ["--preset", "small", "--layers", "16", "--dim", "2048", "--heads", "32", "--kv-heads", "8",
           "--hidden", "8192", "--vocab", "128256", "--max-positions", "8192", "--tie"],
}
ALL_DTYPES = ["bf16", "q8_0", "q4_0", "q4_k_m"]
ALL_TESTS = ["pp512", "pp2048", "decode"]
SMOLLM2 = os.path.expanduser("~/.cache/starserve/SmolLM2-135M-Instruct.Q4_1.gguf")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama-cpp-dir", default=os.environ.get("LLAMA_CPP_DIR"),
                   required="LLAMA_CPP_DIR" not in os.environ,
                   help="llama.cpp build directory holding bin/llama-bench (or LLAMA_CPP_DIR)")
    p.add_argument("--llama-cpp-commit", help="recorded in the output; default: llama-bench's build_commit")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), help="holds star-bench and star-mkmodel")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/starserve/bench"), help="generated model files")
    p.add_argument("--models", nargs="+", default=["smollm2", "small", "1b"], choices=["smollm2", "small", "1b"])
    p.add_argument("--dtypes", nargs="+", default=ALL_DTYPES, choices=ALL_DTYPES,
                   help="for the generated shapes (SmolLM2 is its own Q4_1 file)")
    p.add_argument("--tests", nargs="+", default=ALL_TESTS, choices=ALL_TESTS)
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3, help="runs of each program per test (median)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--kv-dtype", default="bf16", choices=["f32", "bf16", "q8_0"],
                   help="star-bench's KV cache type; bf16 holds as many bytes a token as llama.cpp's default f16")
    p.add_argument("--png", default="vs_llamacpp.png", help="ratio chart ('' for none)")
    p.add_argument("--json", help="also write every sample here")
    return p.parse_args()


def model_files(args):
    """(label, path) of every file to run, making the generated ones that are missing."""
    files = []
    for model in args.models:
        if model == "smollm2":
            if not os.path.exists(SMOLLM2):
                sys.exit(f"{SMOLLM2} is missing: run scripts/fetch_models.sh")
            files.append(("SmolLM2-135M Q4_1", SMOLLM2))
            continue
        for dtype in args.dtypes:
            files.append((f"{model} {dtype.upper()}", bench_model_file(args.build_dir, args.cache, model, dtype)))
    return files


def bench_model_file(build_dir, cache, model, dtype):
    """The GGUF of a generated shape (SHAPES) in `dtype` under `cache`, made with star-mkmodel when missing."""
    path = os.path.join(cache, f"{model}-{dtype}.gguf")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        command = [os.path.join(build_dir, "star-mkmodel"), "--format", "gguf", "--dtype", dtype,
                   "--out", path + ".part"] + SHAPES[model]
        print("making", path, file=sys.stderr)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        os.replace(path + ".part", path)
    return path


def run_with_rusage(command):
    """(stdout, peak RSS MiB) of one run, the RSS from wait4's rusage of that child alone."""
    with open(os.devnull, "wb") as devnull:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(write_end, 1)
            os.dup2(devnull.fileno(), 2)
            os.close(read_end)
            os.close(write_end)
            try:
                os.execv(command[0], command)
            finally:
                os._exit(127)
        os.close(write_end)
        chunks = []
        with os.fdopen(read_end, "rb") as pipe:
            for chunk in iter(lambda: pipe.read(65536), b""):
                chunks.append(chunk)
        _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(command)}")
    return b"".join(chunks).decode(), usage.ru_maxrss / 1024.0


def star_bench(args, path, test):
    prompt, decode = (int(test[2:]), 1) if test.startswith("pp") else (1, args.decode_tokens)
    command = [os.path.join(args.build_dir, "star-bench"), "model", "--model", path, "--prompt-tokens", str(prompt),
               "--decode-tokens", str(decode), "--repeats", "1", "--kv-dtype", args.kv_dtype]
    out, _ = run_with_rusage(command)
    rss = float(re.search(r"peak RSS after prefill and decode: ([0-9.]+) MiB", out).group(1))
    row = "prefill" if test.startswith("pp") else "decode"
    rate = float(re.search(rf"\| {row} \d+ tokens \| ([0-9.]+) tokens/s", out).group(1))
    return rate, rss


def llama_bench(args, path, test):
    prompt, decode = (int(test[2:]), 0) if test.startswith("pp") else (0, args.decode_tokens)
    command = [os.path.join(args.llama_cpp_dir, "bin", "llama-bench"), "-m", path, "-p", str(prompt), "-n", str(decode),
               "-t", str(args.threads), "-r", "1", "-o", "json"]
    out, rss = run_with_rusage(command)
    result = json.loads(out)[0]
    llama_bench.commit = result.get("build_commit")
    return float(result["avg_ts"]), rss


def main():
    args = parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    files = model_files(args)
    rows, samples = [], []
    for label, path in files:
        for test in args.tests:
            star, llama = [], []
            for _ in range(args.repeats):
                star.append(star_bench(args, path, test))
                llama.append(llama_bench(args, path, test))
            s_rate, s_rss = statistics.median(r for r, _ in star), statistics.median(m for _, m in star)
            l_rate, l_rss = statistics.median(r for r, _ in llama), statistics.median(m for _, m in llama)
            rows.append((label, test, s_rate, l_rate, s_rss, l_rss))
            samples.append({"file": path, "test": test, "starserve": star, "llama.cpp": llama})
            print(f"{label} {test}: starserve {s_rate:.2f} tok/s {s_rss:.0f} MiB, "
                  f"llama.cpp {l_rate:.2f} tok/s {l_rss:.0f} MiB", file=sys.stderr, flush=True)
    commit = args.llama_cpp_commit or getattr(llama_bench, "commit", "?")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"llama.cpp {commit}, {args.threads} threads, medians of {args.repeats} alternated runs, "
          f"decode {args.decode_tokens} tokens, starserve KV cache {args.kv_dtype} (llama.cpp f16); load average {' '.join(load)} at the end; {time.strftime('%Y-%m-%d')}\n")
    print("| file | test | starserve tok/s | llama.cpp tok/s | speed ratio | starserve RSS MiB | llama.cpp RSS MiB | RSS ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for label, test, s_rate, l_rate, s_rss, l_rss in rows:
        print(f"| {label} | {test} | {s_rate:.2f} | {l_rate:.2f} | {s_rate / l_rate:.2f} | {s_rss:.0f} | {l_rss:.0f} | "
              f"{s_rss / l_rss:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"llama_cpp_commit": commit, "threads": args.threads, "samples": samples}, f, indent=1)
    if args.png:
        write_png(args.png, rows)


def write_png(path, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG", file=sys.stderr)
        return
    labels = [f"{label}\n{test}" for label, test, *_ in rows]
    speed = [s / l for _, _, s, l, _, _ in rows]
    memory = [s / l for _, _, _, _, s, l in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), 4))
    positions = range(len(rows))
    ax.bar([p - 0.2 for p in positions], speed, width=0.4, label="speed: starserve / llama.cpp")
    ax.bar([p + 0.2 for p in positions], memory, width=0.4, label="peak RSS: starserve / llama.cpp")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
