#!/usr/bin/python3
"""Head-of-line blocking: what a long context arriving does to streams that are decoding, and what
they do to its Phase 1.

    scripts/bench/serve_head_of_line.py
    scripts/bench/serve_head_of_line.py --arrival-tokens 4096 --stream-tokens 64 --repeats 1   # a quick look

`mpirun -np 2 star-server`, one thread per rank, on the `small` preset GGUF (as
scripts/bench/serve_throughput.py). A --context-tokens context is encoded once (CreateContext);
--streams Generate calls decode on it (greedy, ignore_eos, --stream-tokens each). The arrival is one
Generate with an inline context of --arrival-tokens token ids (TokenInput: its Phase 1 runs in the
request) and --arrival-max-tokens tokens to make. Each repeat runs, in order:

  streams alone    the streams without the arrival
  arrival alone    the arrival on an idle server
  together         the streams; once the first of them has made --arrival-after tokens, the arrival

Reported (medians of --repeats): the streams' inter-token latency p99 (every gap between two
consecutive tokens of a stream, as this client receives them, pooled over the streams) alone and
together, and together counting only the gaps that end inside the arrival's Phase 1; the arrival's
Phase 1 seconds (the server's GenerateDone timing) and its time to first token (from sending it, as
this client sees it, so queueing counts) alone and together. The PNG (--png) shows tokens over time
per stream in the last `together` run, dashed the same streams alone, the arrival and its Phase 1
span (placed at send + the server's queue_seconds) marked.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

import serving

DTYPES = ["bf16", "q8_0", "q4_0", "q4_k_m"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(serving.REPO, "build"), help="holds star-server, star-mkmodel")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/starserve/bench"), help="generated model files")
    p.add_argument("--dtype", default="q8_0", choices=DTYPES, help="weights of the `small` GGUF")
    p.add_argument("--streams", type=int, default=4)
    p.add_argument("--context-tokens", type=int, default=2048, help="the streams' encoded context")
    p.add_argument("--query-tokens", type=int, default=16)
    p.add_argument("--stream-tokens", type=int, default=512,
                   help="tokens each stream makes (enough to decode through the arrival's Phase 1)")
    p.add_argument("--arrival-tokens", type=int, default=16384, help="the arrival's inline context")
    p.add_argument("--arrival-max-tokens", type=int, default=4)
    p.add_argument("--arrival-after", type=int, default=16, help="tokens the first stream makes before the arrival")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads-per-rank", type=int, default=1)
    p.add_argument("--kv-dtype", default="bf16", choices=["f32", "bf16", "q8_0"], help="star-server's KV cache")
    p.add_argument("--server-arg", action="append", default=[], help="one more star-server argument (repeatable)")
    p.add_argument("--json", default="serve_head_of_line.json", help="every sample ('' for none)")
    p.add_argument("--png", default="serve_head_of_line.png", help="tokens over time ('' for none)")
    args = p.parse_args()
    if args.arrival_after >= args.stream_tokens:
        p.error("--arrival-after must be below --stream-tokens")
    return args


class Scenarios:
    """The streams' and the arrival's requests, and the runs made of them."""

    def __init__(self, star, args):
        self.star, self.args = star, args
        pb = star.pb
        context = star.create_context(star.token_ids(args.context_tokens, seed=1, bos=True),
                                      reserve_tokens=args.query_tokens + args.stream_tokens)
        self.stream_requests = [star.session_request(context.context_id,
                                                     star.token_ids(args.query_tokens, seed=100 + i, bos=False),
                                                     args.stream_tokens) for i in range(args.streams)]
        self.arrival_request = pb.GenerateRequest(
            tokens=pb.TokenInput(context_ids=star.token_ids(args.arrival_tokens, seed=2, bos=True),
                                 query_ids=star.token_ids(args.query_tokens, seed=99, bos=False)),
            sampling=pb.SamplingParams(temperature=0.0), max_tokens=args.arrival_max_tokens, ignore_eos=True)

    def streams(self, arrival=False):
        """Runs the streams (with the arrival once the first has made --arrival-after tokens)."""
        out = [serving.TokenStream() for _ in self.stream_requests]
        threads = [threading.Thread(target=self.star.generate, args=(r, s)) for r, s in zip(self.stream_requests, out)]
        for t in threads:
            t.start()
        arriving = None
        if arrival:
            while max(len(s.times) for s in out) < self.args.arrival_after and any(t.is_alive() for t in threads):
                time.sleep(0.002)
            arriving = serving.TokenStream()
            threads.append(threading.Thread(target=self.star.generate, args=(self.arrival_request, arriving)))
            threads[-1].start()
        for t in threads:
            t.join()
        for i, s in enumerate(out):
            check(f"stream {i}", s, self.args.stream_tokens)
        if arriving is not None:
            check("the arrival", arriving, self.args.arrival_max_tokens)
        return out, arriving

    def arrival_alone(self):
        arriving = serving.TokenStream()
        self.star.generate(self.arrival_request, arriving)
        check("the arrival", arriving, self.args.arrival_max_tokens)
        return arriving


def check(name, stream, tokens):
    if stream.error or stream.done is None:
        sys.exit(f"{name}: {stream.error or 'ended without a done message'}")
    if len(stream.times) != tokens:
        sys.exit(f"{name}: {len(stream.times)} tokens, not {tokens}")


def phase1_span(arriving):
    """The arrival's Phase 1 in client time: from send + queue_seconds, phase1_seconds long."""
    start = arriving.sent + arriving.done.timings.queue_seconds
    return start, start + arriving.done.timings.phase1_seconds


def gaps(streams, span=None):
    """Every stream's inter-token gaps; with a span, those that end inside it."""
    out = []
    for s in streams:
        for a, b in zip(s.times, s.times[1:]):
            if span is None or span[0] <= b <= span[1]:
                out.append(b - a)
    return out


def phase1_profile(together, span, slices=10):
    """The gaps ending in each tenth of the arrival's Phase 1: [median, p99] in seconds, so a table
    can tell whether the tail comes from one stretch of the encoding (its start, its longest prefix)."""
    width = (span[1] - span[0]) / slices
    profile = []
    for i in range(slices):
        part = gaps(together, (span[0] + i * width, span[0] + (i + 1) * width))
        profile.append([serving.percentile(part, 50), serving.percentile(part, 99)] if part else None)
    return profile


def summarize(alone, arrival_alone, together, arriving):
    span = phase1_span(arriving)
    during = gaps(together, span)
    return {
        "itl_p99_alone": serving.percentile(gaps(alone), 99),
        "itl_p99_together": serving.percentile(gaps(together), 99),
        "itl_p99_during_phase1": serving.percentile(during, 99) if during else None,
        "stream_tokens_during_phase1": len(during),
        "streams_end_after_phase1": float(max(s.times[-1] for s in together) >= span[1]),
        "phase1_seconds_alone": arrival_alone.done.timings.phase1_seconds,
        "phase1_seconds_together": arriving.done.timings.phase1_seconds,
        "first_token_seconds_alone": arrival_alone.times[0] - arrival_alone.sent,
        "first_token_seconds_together": arriving.times[0] - arriving.sent,
        "queue_seconds_together": arriving.done.timings.queue_seconds,
        "itl_alone_median": serving.percentile(gaps(alone), 50),
        "phase1_gap_profile": phase1_profile(together, span),
    }


def main():
    args = parse_args()
    model = serving.bench_gguf(args.build_dir, args.cache, args.dtype)
    samples, last = [], None
    with tempfile.TemporaryDirectory() as work:
        stubs = os.path.join(work, "stubs")
        os.makedirs(stubs)
        star = serving.StarServer(args.build_dir, model, args.ranks, args.threads_per_rank,
                                  ["--kv-dtype", args.kv_dtype] + args.server_arg, work, serving.grpc_modules(stubs))
        try:
            scenarios = Scenarios(star, args)
            for r in range(args.repeats):
                alone, _ = scenarios.streams()
                arrival_alone = scenarios.arrival_alone()
                together, arriving = scenarios.streams(arrival=True)
                samples.append(summarize(alone, arrival_alone, together, arriving))
                print(f"repeat {r + 1}: " + ", ".join(f"{k} {v:.4g}" for k, v in samples[-1].items()
                                                      if isinstance(v, (int, float))),
                      file=sys.stderr, flush=True)
                last = (alone, together, arriving)
        finally:
            star.stop()
    result = {k: serving.median([s[k] for s in samples]) if all(s[k] is not None for s in samples) else None
              for k in samples[0] if k != "phase1_gap_profile"}
    result["streams_end_after_phase1"] = min(s["streams_end_after_phase1"] for s in samples)  # 1: in every run
    print_table(args, result)
    for r, sample in enumerate(samples):
        print(f"repeat {r + 1}, gaps ending in each tenth of the arrival's Phase 1 (median / p99 ms): " +
              ", ".join("–" if p is None else f"{1e3 * p[0]:.0f}/{1e3 * p[1]:.0f}" for p in sample["phase1_gap_profile"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": model, "settings": serving.recorded_settings(args), "load_average": serving.load_average(),
                       "medians": result, "samples": samples}, f, indent=1)
    if args.png:
        write_png(args.png, args, *last)


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "–"


def print_table(args, m):
    print(f"small {args.dtype.upper()}, {args.ranks} ranks x {args.threads_per_rank} thread(s), KV {args.kv_dtype}; "
          f"{args.streams} streams of {args.stream_tokens} tokens on a {args.context_tokens}-token context; "
          f"arrival: {args.arrival_tokens}-token inline context after {args.arrival_after} tokens; medians of "
          f"{args.repeats}; load average {serving.load_average()} at the end; {time.strftime('%Y-%m-%d')}\n")
    print("| measure | alone | together | ratio | goal |")
    print("|---|---|---|---|---|")
    during = m["itl_p99_during_phase1"]
    print(f"| streams' inter-token latency p99, ms | {1e3 * m['itl_p99_alone']:.1f} | "
          f"{1e3 * m['itl_p99_together']:.1f} | {ratio(m['itl_p99_together'], m['itl_p99_alone'])} | ≤ 3x |")
    print(f"| same, gaps ending in the arrival's Phase 1, ms | {1e3 * m['itl_p99_alone']:.1f} | "
          f"{'–' if during is None else f'{1e3 * during:.1f}'} | {ratio(during, m['itl_p99_alone'])} | ≤ 3x |")
    print(f"| arrival's Phase 1, s (server) | {m['phase1_seconds_alone']:.2f} | {m['phase1_seconds_together']:.2f} | "
          f"{ratio(m['phase1_seconds_together'], m['phase1_seconds_alone'])} | ≤ 1.3x |")
    print(f"| arrival's first token, s (client, queue included) | {m['first_token_seconds_alone']:.2f} | "
          f"{m['first_token_seconds_together']:.2f} | "
          f"{ratio(m['first_token_seconds_together'], m['first_token_seconds_alone'])} | |")
    print(f"\nstream tokens that arrived during the arrival's Phase 1: {m['stream_tokens_during_phase1']:.0f} "
          f"(median); the arrival waited {m['queue_seconds_together']:.2f} s in the queue")
    if m["streams_end_after_phase1"] < 1:
        print("note: in some runs the streams ended before the arrival's Phase 1 did, so part of it ran beside "
              "no stream (with a server that runs one request at a time, always); raise --stream-tokens to cover it")


def write_png(path, args, alone, together, arriving):
    plt = serving.pyplot()
    if plt is None:
        return
    origin = min(s.sent for s in together)
    origin_alone = min(s.sent for s in alone)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (a, s) in enumerate(zip(alone, together)):
        line, = ax.step([t - origin for t in s.times], range(1, len(s.times) + 1), where="post", label=f"stream {i}")
        ax.step([t - origin_alone for t in a.times], range(1, len(a.times) + 1), where="post", linestyle="--",
                color=line.get_color(), alpha=0.5)
    start, end = phase1_span(arriving)
    ax.axvline(arriving.sent - origin, color="black", linewidth=0.8, label="arrival sent")
    ax.axvspan(start - origin, end - origin, color="grey", alpha=0.25, label="arrival's Phase 1")
    ax.axvline(arriving.times[0] - origin, color="black", linestyle=":", linewidth=0.8, label="arrival's first token")
    ax.set_xlabel("seconds since the streams were sent")
    ax.set_ylabel("tokens received")
    ax.set_title(f"{args.streams} streams on a {args.context_tokens}-token context; a {args.arrival_tokens}-token "
                 f"context arrives (dashed: the streams alone)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
