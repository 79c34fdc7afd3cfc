#!/usr/bin/python3
"""Needles that straddle a block boundary, on a chat model served by star-server: how many each
attention configuration answers, with and without the block-boundary overlap.

  /usr/bin/python3 scripts/eval/straddle_needles.py --bin build --model SmolLM2.gguf \
      --context-tokens 1024 --samples 10 --overlaps 0,64 --out docs/eval/straddle_1k.json

Each sample is RULER's niah_single_1 (the repeated noise haystack, one "special magic number"
needle). --format chatml (SmolLM2): in the model's ChatML chat template, the user turn holds the
haystack (the context, split into 4 blocks on 2 ranks) and the question, and the assistant turn
starts with RULER's answer prefix. --format plain (models/needle-llama): the haystack, then the
question and answer prefix of its training text (scripts/train/retrieval_data.py), with its keys
and 5-digit values.
The needle is placed so that one of the three inner block edges (chosen per sample) cuts it in two:
those pieces never see each other in Phase 1 under star or no-anchor. Token positions come from the
server's own tokenizer (star-client tokenize), so the cut is exact. For each overlap a fresh
star-server runs with --boundary-overlap N (the server default; requests set algorithm and block
size), dense once, with overlap 0 (unless --skip-dense). Scoring is RULER's string_match_all (the
value is in the answer).
Deterministic for a seed: greedy decoding, the same samples.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import retrieval_data  # noqa: E402  (needle-llama's keys, for --format plain)

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
KEYS = ["lantern", "harbor", "meadow", "copper", "falcon", "orchid", "glacier", "saddle", "velvet", "quarry",
        "thimble", "compass", "juniper", "anvil", "bramble", "cobalt", "dune", "ember", "fjord", "garnet"]


class Server:
    def __init__(self, bin_dir, model, ranks, overlap, work):
        self.bin_dir, self.work = bin_dir, work
        port_file = os.path.join(work, f"server{overlap}.port")
        args = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
                os.path.join(bin_dir, "star-server"), "--model", model, "--grpc", "127.0.0.1:0",
                "--port-file", port_file,
                # A rank starved of CPU on a shared machine misses the default 3 s heartbeat.
                "--rank-timeout", "120"]
        if overlap:
            args += ["--boundary-overlap", str(overlap)]
        self.log = open(os.path.join(work, f"server{overlap}.log"), "w")
        self.proc = subprocess.Popen(args, stderr=self.log, stdout=self.log)
        for _ in range(1200):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            if self.proc.poll() is not None:
                sys.exit(f"star-server exited: see {self.log.name}")
            time.sleep(0.1)
        lines = open(port_file).read().split()
        self.address, self.rank0 = f"127.0.0.1:{lines[0]}", int(lines[1])
        while subprocess.run([os.path.join(bin_dir, "star-client"), "--server", self.address, "health"],
                             capture_output=True).returncode != 0:
            time.sleep(0.2)

    def client(self, *args):
        out = subprocess.run([os.path.join(self.bin_dir, "star-client"), "--server", self.address, *args],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"star-client {args[0]} failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout

    def tokens(self, text):
        return len(self.client("tokenize", "--special", text).split())

    def stop(self):
        os.kill(self.rank0, 15)
        self.proc.wait()


def make_sample(server, rng, context_tokens, blocks, chat):
    """(context, query, value, block_size, edge, needle span) with the needle cut by an inner edge."""
    if chat:
        key, value = rng.choice(KEYS), str(rng.randrange(1000000, 9999999))
        head = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
        query = (f"\nWhat is the special magic number for {key} mentioned in the provided text?<|im_end|>\n"
                 f"<|im_start|>assistant\nThe special magic number for {key} mentioned in the provided text is")
    else:
        key, value = retrieval_data.make_key(rng, "number"), retrieval_data.make_value(rng, "number")
        head = ""
        query = retrieval_data.single_query("number", key)
    needle = f"The special magic number for {key} is {value}. "
    per_noise = server.tokens(NOISE * 8) / 8
    n_noise = int((context_tokens - server.tokens(head + needle)) / per_noise)
    block = math.ceil((server.tokens(head + NOISE * n_noise + needle)) / blocks)
    edge = block * rng.randrange(1, blocks)
    # Noise sentences are ~5 tokens: binary-search the last sentence start before the edge; the
    # needle must cross the edge with at least one token on each side.
    sentences = [t.strip() + "." for t in NOISE.split(".") if t.strip()] * n_noise
    before = lambda cut: head + "".join(t + " " for t in sentences[:cut])
    lo, hi = 0, len(sentences)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if server.tokens(before(mid)) < edge - 1:
            lo = mid
        else:
            hi = mid - 1
    # Every sentence start whose needle still crosses the edge; one drawn at random, so that the
    # edge falls anywhere in the needle (before the key, inside the value, ...).
    spans = []
    for cut in range(lo, -1, -1):
        start, end = server.tokens(before(cut)), server.tokens(before(cut) + needle)
        if end <= edge + 1:
            break
        if start < edge - 1:
            spans.append((cut, start, end))
    if not spans:
        return None
    lo, start, end = rng.choice(spans)
    context = before(lo) + needle + " ".join(sentences[lo:])
    return {"context": context, "query": query, "value": value, "block_size": block, "edge": edge,
            "needle": [start, end], "context_tokens": server.tokens(context)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with star-server and star-client")
    ap.add_argument("--model", required=True)
    ap.add_argument("--context-tokens", type=int, default=1024)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--overlaps", default="0,64", help="boundary_overlap values; 0 also runs dense")
    ap.add_argument("--algorithms", default="star,no-anchor")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=("chatml", "plain"), default="chatml")
    ap.add_argument("--skip-dense", action="store_true",
                    help="leave dense out of overlap 0 (an earlier run of the same samples has it)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    overlaps = [int(o) for o in a.overlaps.split(",")]
    cells = []
    with tempfile.TemporaryDirectory() as work:
        samples = []
        for overlap in overlaps:
            server = Server(a.bin, a.model, a.ranks, overlap, work)
            try:
                while len(samples) < a.samples:
                    s = make_sample(server, rng, a.context_tokens, a.blocks, a.format == "chatml")
                    if s:
                        samples.append(s)
                runs = [("dense", 0)] if overlap == 0 and not a.skip_dense else []
                runs += [(name, overlap) for name in a.algorithms.split(",")]
                for algorithm, _ in runs:
                    right, answers = 0, []
                    for s in samples:
                        path = os.path.join(work, "context.txt")
                        with open(path, "w") as f:
                            f.write(s["context"])
                        pred = server.client("generate", "--context-file", path, "--query", s["query"],
                                             "--max-tokens", "16", "--attention", algorithm,
                                             "--block-size", str(s["block_size"]))
                        right += s["value"] in pred
                        answers.append(pred.strip())
                    cells.append({"algorithm": algorithm, "boundary_overlap": overlap if algorithm != "dense" else 0,
                                  "right": right, "samples": len(samples), "answers": answers})
                    print(f"{algorithm:10s} overlap {overlap:4d}: {right}/{len(samples)}", flush=True)
            finally:
                server.stop()
    result = {"model": os.path.basename(os.path.normpath(a.model)), "format": a.format,
              "context_tokens": a.context_tokens, "blocks": a.blocks,
              "ranks": a.ranks, "seed": a.seed,
              "samples": [{k: s[k] for k in ("value", "block_size", "edge", "needle", "context_tokens")}
                          for s in samples],
              "cells": cells}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
