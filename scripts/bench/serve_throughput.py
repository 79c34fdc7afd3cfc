#!/usr/bin/python3
"""Serving throughput: aggregate decode tokens/s of N concurrent streams on one encoded context,
starserve's star-server against llama.cpp's llama-server on the same GGUF.

    scripts/bench/serve_throughput.py --llama-cpp-dir <llama.cpp build directory>
    scripts/bench/serve_throughput.py --concurrency 1 4 --max-tokens 32 --repeats 1   # a quick look

starserve: `mpirun -np 2 star-server`, one thread per rank, on the `small` preset GGUF (made and
cached by scripts/bench/vs_llamacpp.py's recipe in ~/.cache/starserve/bench). The context
(--context-tokens, BOS first) is encoded once with CreateContext; then N Generate calls stream on
it at once (SessionInput, each with its own --query-tokens query), greedy, ignore_eos, so that every
stream makes exactly --max-tokens tokens.

llama.cpp: `llama-server -np N -cb -t T -tb T` (T = every thread starserve has, ranks x threads)
on the same file, restarted for each N. The context is evaluated once per server, in slot 0, and
saved with /slots?action=save (the counterpart of CreateContext); before each run every slot
restores it, so that a request evaluates only its query (cache_prompt; the JSON records prompt_n).
Then N /completion calls stream at once, slot i with the same context + query i token ids,
n_predict --max-tokens, ignore_eos, greedy.

The metric, the same for both (serving.decode_rate): the tokens each stream made after its first,
summed, over the wall time from the first stream's first token to the last stream's last token,
with times taken by this client as each streamed message arrives. Each stream's first token comes
from its query's prefill and is left out. Runs alternate (starserve, llama.cpp, starserve, ...);
the table gives medians of --repeats. Writes every sample to --json and a PNG of tokens/s against
concurrency (--png). gRPC goes through Python's grpcio (stubs generated at run time from proto/),
because star-client runs one request at a time and does not report when each token arrived.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

import serving
from llama_server import LlamaServer, llama_cpp_commit

DTYPES = ["bf16", "q8_0", "q4_0", "q4_k_m"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama-cpp-dir", default=os.environ.get("LLAMA_CPP_DIR"),
                   help="llama.cpp build directory holding bin/llama-server (or LLAMA_CPP_DIR); "
                        "without one only starserve runs")
    p.add_argument("--build-dir", default=os.path.join(serving.REPO, "build"), help="holds star-server, star-mkmodel")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/starserve/bench"), help="generated model files")
    p.add_argument("--dtype", default="q8_0", choices=DTYPES, help="weights of the `small` GGUF")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 32])
    p.add_argument("--context-tokens", type=int, default=2048)
    p.add_argument("--query-tokens", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=128, help="tokens every stream makes")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="threads in all: starserve's ranks share them, llama.cpp uses them")
    p.add_argument("--kv-dtype", default="bf16", choices=["f32", "bf16", "q8_0"],
                   help="star-server's KV cache; bf16 holds as many bytes a token as llama.cpp's default f16")
    p.add_argument("--server-arg", action="append", default=[], help="one more star-server argument (repeatable)")
    p.add_argument("--json", default="serve_throughput.json", help="every sample ('' for none)")
    p.add_argument("--png", default="serve_throughput.png", help="tokens/s against concurrency ('' for none)")
    args = p.parse_args()
    if args.threads % args.ranks:
        p.error("--threads must be a multiple of --ranks")
    return args


def run_streams(targets):
    """Runs the callables at once, one thread each, and waits for all."""
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def check_stream(server, i, stream, max_tokens, finished_by_length):
    if stream.error or stream.done is None:
        sys.exit(f"{server} stream {i}: {stream.error or 'ended without its final message'}")
    if len(stream.times) != max_tokens or not finished_by_length(stream.done):
        sys.exit(f"{server} stream {i}: {len(stream.times)} tokens, not {max_tokens} ending at the length limit")


def star_run(star, context_id, queries, streams, max_tokens):
    out = [serving.TokenStream() for _ in range(streams)]
    run_streams([lambda i=i: star.generate(star.session_request(context_id, queries[i], max_tokens), out[i])
                 for i in range(streams)])
    length = star.pb.FINISH_REASON_LENGTH
    for i, s in enumerate(out):
        check_stream("starserve", i, s, max_tokens,
                     lambda d: d.finish_reason == length and d.usage.completion_tokens == max_tokens)
    return {"tokens_per_second": serving.decode_rate(out),
            "first_token_seconds": [s.times[0] - s.sent for s in out],
            "server_queue_seconds": [s.done.timings.queue_seconds for s in out]}


def llama_run(llama, context_ids, queries, streams, max_tokens):
    for slot in range(streams):
        llama.restore_context(slot)
    out = [serving.TokenStream() for _ in range(streams)]
    run_streams([lambda i=i: llama.generate(i, context_ids + queries[i], max_tokens, out[i]) for i in range(streams)])
    for i, s in enumerate(out):
        check_stream("llama.cpp", i, s, max_tokens,
                     lambda d: d.get("stop_type") == "limit" and d.get("tokens_predicted") == max_tokens)
    return {"tokens_per_second": serving.decode_rate(out),
            "first_token_seconds": [s.times[0] - s.sent for s in out],
            # prompt tokens evaluated: the query's, when the restored context was reused
            "prompt_tokens_evaluated": [s.done["timings"]["prompt_n"] for s in out]}


def main():
    args = parse_args()
    model = serving.bench_gguf(args.build_dir, args.cache, args.dtype)
    commit = llama_cpp_commit(args.llama_cpp_dir) if args.llama_cpp_dir else None
    samples = {"starserve": {}, "llama.cpp": {}}
    with tempfile.TemporaryDirectory() as work:
        stubs = os.path.join(work, "stubs")
        os.makedirs(stubs)
        star = serving.StarServer(args.build_dir, model, args.ranks, args.threads // args.ranks,
                                  ["--kv-dtype", args.kv_dtype] + args.server_arg, work, serving.grpc_modules(stubs))
        try:
            context_ids = star.token_ids(args.context_tokens, seed=1, bos=True)
            queries = [star.token_ids(args.query_tokens, seed=100 + i, bos=False) for i in range(max(args.concurrency))]
            context = star.create_context(context_ids, reserve_tokens=args.query_tokens + args.max_tokens)
            print(f"context {context.context_id}: {context.context_tokens} tokens, Phase 1 "
                  f"{context.phase1_seconds:.2f} s", file=sys.stderr)
            for n in args.concurrency:
                llama = None
                if commit is not None:
                    llama = LlamaServer(args.llama_cpp_dir, model, n, args.context_tokens + args.query_tokens +
                                        args.max_tokens + 8, args.threads, work)
                    llama.save_context(context_ids)
                try:
                    for _ in range(args.repeats):
                        samples["starserve"].setdefault(n, []).append(
                            star_run(star, context.context_id, queries, n, args.max_tokens))
                        report(n, "starserve", samples["starserve"][n][-1])
                        if llama is not None:
                            samples["llama.cpp"].setdefault(n, []).append(
                                llama_run(llama, context_ids, queries, n, args.max_tokens))
                            report(n, "llama.cpp", samples["llama.cpp"][n][-1])
                finally:
                    if llama is not None:
                        llama.stop()
        finally:
            star.stop()
    print_table(args, commit, samples)
    if args.json:
        with open(args.json, "w") as f:
            # llama.cpp is recorded by its commit: its build directory is this machine's, outside
            # the repository, where a committed result may not point.
            settings = serving.recorded_settings(args, leave_out=("llama_cpp_dir",))
            json.dump({"llama_cpp_commit": commit, "model": model, "settings": settings, "load_average": serving.load_average(),
                       "metric": "tokens after each stream's first / (last stream's last token - first stream's first token)",
                       "samples": samples}, f, indent=1)
    if args.png:
        write_png(args.png, args, commit, samples)


def report(n, server, sample):
    print(f"{n} streams, {server}: {sample['tokens_per_second']:.2f} tokens/s", file=sys.stderr, flush=True)


def medians(samples):
    return {n: serving.median(s["tokens_per_second"] for s in runs) for n, runs in samples.items()}


def print_table(args, commit, samples):
    star, llama = medians(samples["starserve"]), medians(samples["llama.cpp"])
    llama_label = f"llama.cpp {commit} (-np N -cb)" if commit else "llama.cpp not run (no --llama-cpp-dir)"
    print(f"small {args.dtype.upper()}, context {args.context_tokens} tokens, query {args.query_tokens}, "
          f"{args.max_tokens} tokens a stream; starserve {args.ranks} ranks x {args.threads // args.ranks} thread(s), "
          f"KV {args.kv_dtype}; {llama_label}, {args.threads} threads; medians of {args.repeats}; "
          f"load average {serving.load_average()} at the end; {time.strftime('%Y-%m-%d')}\n")
    print("| streams | starserve tok/s | vs 1 stream | llama.cpp tok/s | vs 1 stream | starserve / llama.cpp |")
    print("|---|---|---|---|---|---|")
    first = min(star)

    def cell(rates, n):
        if n not in rates:
            return "–", "–"
        scale = f"{rates[n] / rates[first]:.2f}x" if first in rates else "–"
        return f"{rates[n]:.2f}", scale

    for n in sorted(star):
        s_rate, s_scale = cell(star, n)
        l_rate, l_scale = cell(llama, n)
        ratio = f"{star[n] / llama[n]:.2f}" if n in llama else "–"
        print(f"| {n} | {s_rate} | {s_scale} | {l_rate} | {l_scale} | {ratio} |")
    print(f"\nvs 1 stream: against the run with {first} stream(s)")


def write_png(path, args, commit, samples):
    plt = serving.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for server, label in (("starserve", f"starserve ({args.ranks} ranks x {args.threads // args.ranks} thread)"),
                          ("llama.cpp", f"llama.cpp {commit} server ({args.threads} threads)")):
        rates = medians(samples[server])
        if rates:
            ns = sorted(rates)
            ax.plot(ns, [rates[n] for n in ns], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(args.concurrency))
    ax.set_xticklabels([str(n) for n in sorted(args.concurrency)])
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("aggregate decode tokens/s")
    ax.set_title(f"small {args.dtype.upper()}, {args.context_tokens}-token context, {args.max_tokens} tokens a stream",
                 fontsize=9)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
