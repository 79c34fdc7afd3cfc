#!/usr/bin/python3
"""Needles that straddle a block boundary, on a chat model served by star-server: how many each
attention configuration answers, with and without the block-boundary overlap and edge snapping.

  /usr/bin/python3 scripts/eval/straddle_needles.py --bin build --model SmolLM2.gguf \
      --context-tokens 1024 --samples 10 --overlaps 0,64 --out docs/eval/straddle_1k.json

Each sample is RULER's niah_single_1 (the repeated noise haystack, one "special magic number"
needle). --format chatml (SmolLM2): in the model's ChatML chat template, the user turn holds the
haystack (the context, split into 4 blocks on 2 ranks) and the question, and the assistant turn
starts with RULER's answer prefix. --format plain (models/needle-llama): the haystack, then the
question and answer prefix of its training text (scripts/train/retrieval_data.py), with its keys
and 5-digit values.
The needle is placed so that one of the three inner block edges (chosen per sample) cuts it in two:
those pieces never see each other in Phase 1 under star or no-anchor. The prompt goes to the server
as token ids (gRPC TokenInput), built sentence by sentence from the server's own tokenizer
(star-client tokenize --special, so the chat markers are the model's special tokens), so the cut is
exact. One star-server answers every configuration: each request sets algorithm, block size,
boundary_overlap and boundary_snap; dense runs once, beside overlap 0 and snap 0 (unless
--skip-dense). With a snap the server moves the edge back onto the sentence end before the needle,
so the needle is no longer cut: the samples stay the same (star with its default anchor keeps its
first edge, where the anchor already holds the whole of block 0). --pairs runs both repairs at once
(the snap moves the edge, the overlap then reads the tokens before the new one). --anchor-positions
adjacent runs star's cells with the anchor just before each block's pass instead of at 0..a-1. Scoring is RULER's
string_match_all (the value is in the answer). Needs python3-grpcio and protoc with
grpc_python_plugin (or grpc_tools). Deterministic for a seed: greedy decoding, the same samples.
--update reruns only the configurations asked for into an existing --out of the same samples,
replacing their cells in place (after a change to one algorithm, without rerunning the others).
--update --extend adds samples to such a file: --samples past the file's count draws the same first
samples and more; each configuration asked for keeps the answers its cell has and runs only the
samples past them (the other cells keep their counts; each cell names its own).
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

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import retrieval_data  # noqa: E402  (needle-llama's keys, for --format plain)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import star_client  # noqa: E402  (the gRPC stubs, built from proto/ when the script starts)

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
KEYS = ["lantern", "harbor", "meadow", "copper", "falcon", "orchid", "glacier", "saddle", "velvet", "quarry",
        "thimble", "compass", "juniper", "anvil", "bramble", "cobalt", "dune", "ember", "fjord", "garnet"]


class Server:
    def __init__(self, bin_dir, model, ranks, work):
        self.bin_dir = bin_dir
        port_file = os.path.join(work, "server.port")
        args = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
                os.path.join(bin_dir, "star-server"), "--model", model, "--grpc", "127.0.0.1:0",
                "--port-file", port_file,
                # A rank starved of CPU on a shared machine misses the default 3 s heartbeat.
                "--rank-timeout", "120"]
        self.log = open(os.path.join(work, "server.log"), "w")
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
        self.pb, pb_grpc = star_client.load_stubs(work)
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.StarServiceStub(self.channel)
        self.cache = {}

    def ids(self, text, bos=False):
        """The text's token ids, special-token text read as those tokens (the chat markers)."""
        key = (text, bos)
        if key not in self.cache:
            args = [os.path.join(self.bin_dir, "star-client"), "--server", self.address, "tokenize", "--special"]
            out = subprocess.run(args + (["--bos"] if bos else []) + ["--", text], capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"star-client tokenize failed ({out.returncode}): {out.stderr.strip()}")
            self.cache[key] = [int(t) for t in out.stdout.split()]
        return self.cache[key]

    def generate(self, context_ids, query_ids, algorithm, block_size, overlap, snap, anchor_positions="first"):
        attention = self.pb.AttentionConfig(algorithm=algorithm)
        if algorithm != "dense":
            attention.block_size, attention.boundary_overlap, attention.boundary_snap = block_size, overlap, snap
        if algorithm == "star" and anchor_positions != "first":
            attention.anchor_positions = anchor_positions
        request = self.pb.GenerateRequest(tokens=self.pb.TokenInput(context_ids=context_ids, query_ids=query_ids),
                                          sampling=self.pb.SamplingParams(temperature=0.0), max_tokens=16,
                                          attention=attention)
        text = ""
        for response in self.stub.Generate(request):
            if response.HasField("chunk"):
                text += response.chunk.text
        return text

    def stop(self):
        self.channel.close()
        os.kill(self.rank0, 15)
        self.proc.wait()


def make_sample(server, rng, context_tokens, blocks, chat):
    """The sample's token ids, value, block size, edge and needle span, with the needle cut by an inner edge.

    The context is built from token ids, sentence by sentence (each tokenized alone, with its leading
    space), so that the needle's span is exact."""
    if chat:
        key, value = rng.choice(KEYS), str(rng.randrange(1000000, 9999999))
        head = server.ids(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n")
        query = (f"\nWhat is the special magic number for {key} mentioned in the provided text?<|im_end|>\n"
                 f"<|im_start|>assistant\nThe special magic number for {key} mentioned in the provided text is")
    else:
        key, value = retrieval_data.make_key(rng, "number"), retrieval_data.make_value(rng, "number")
        head = server.ids("", bos=True)
        query = retrieval_data.single_query("number", key)
    sentences = [t.strip() + "." for t in NOISE.split(".") if t.strip()]
    pieces = [server.ids(" " + t) for t in sentences]
    needle = server.ids(f" The special magic number for {key} is {value}.")
    per_cycle = sum(len(p) for p in pieces)
    cycles = (context_tokens - len(head) - len(needle)) // per_cycle + 1
    noise = (pieces * cycles)[: max(0, (context_tokens - len(head) - len(needle)) * len(pieces) // per_cycle)]
    total = len(head) + len(needle) + sum(len(p) for p in noise)
    block = math.ceil(total / blocks)
    edge = block * rng.randrange(1, blocks)
    # Every sentence boundary where the needle, put there, crosses the edge with at least one token on
    # each side; one drawn at random, so that the edge falls anywhere in the needle.
    spans, start = [], len(head)
    for cut in range(len(noise) + 1):
        if start < edge <= start + len(needle) - 1:
            spans.append((cut, start))
        if cut < len(noise):
            start += len(noise[cut])
    if not spans:
        return None
    cut, start = rng.choice(spans)
    context = head + [t for p in noise[:cut] for t in p] + needle + [t for p in noise[cut:] for t in p]
    return {"context_ids": context, "query_ids": server.ids(query), "value": value, "block_size": block,
            "edge": edge, "needle": [start, start + len(needle)], "context_tokens": len(context)}


def cell_key(cell):
    return cell["algorithm"], cell["boundary_overlap"], cell.get("boundary_snap", 0), cell.get("anchor_positions", "first")


def sample_record(sample):
    return {k: sample[k] for k in ("value", "block_size", "edge", "needle", "context_tokens")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with star-server and star-client")
    ap.add_argument("--model", required=True)
    ap.add_argument("--context-tokens", type=int, default=1024)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--overlaps", default="0,64", help="boundary_overlap values; 0 also runs dense; '' none")
    ap.add_argument("--snaps", default="0", help="boundary_snap values, each run with overlap 0")
    ap.add_argument("--pairs", default="", help="overlap:snap pairs run together (both repairs at once), e.g. 64:32")
    ap.add_argument("--algorithms", default="star,no-anchor", help="'' with overlap 0: dense alone")
    ap.add_argument("--anchor-positions", choices=("first", "adjacent"), default="first",
                    help="star's anchor positions in these cells (a cell with adjacent says so)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--format", choices=("chatml", "plain"), default="chatml")
    ap.add_argument("--skip-dense", action="store_true",
                    help="leave dense out of overlap 0 (an earlier run of the same samples has it)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--update", action="store_true",
                    help="replace (or add) only these configurations' cells in --out, whose samples must be these")
    ap.add_argument("--extend", action="store_true",
                    help="with --update: --out's samples are the first of these; keep each asked cell's answers "
                         "and run only the samples past them")
    a = ap.parse_args()
    if a.extend and not a.update:
        sys.exit("--extend goes with --update")
    rng = random.Random(a.seed)
    # Each repair alone: every overlap without a snap, then every snap without an overlap; then the
    # pairs asked for, both at once (the snap moves the edge, the overlap reads before the new one).
    overlaps = [int(o) for o in a.overlaps.split(",") if o]
    snaps = [int(n) for n in a.snaps.split(",") if n]
    pairs = []
    for pair in filter(None, a.pairs.split(",")):
        overlap, _, snap = pair.partition(":")
        if not (overlap.isdigit() and snap.isdigit() and int(overlap) >= 1 and int(snap) >= 1):
            sys.exit(f"--pairs: each pair is overlap:snap with both >= 1, got {a.pairs!r}")
        pairs.append((int(overlap), int(snap)))
    repairs = [(o, 0) for o in overlaps] + [(0, n) for n in snaps if n] + pairs
    # What the file's samples depend on, written at its head.
    setting = {"model": os.path.basename(os.path.normpath(a.model)), "format": a.format,
               "context_tokens": a.context_tokens, "blocks": a.blocks, "ranks": a.ranks, "seed": a.seed}
    previous = None
    if a.update:
        if not os.path.exists(a.out):
            sys.exit(f"--update: {a.out} does not exist (run without --update first)")
        with open(a.out) as f:
            previous = json.load(f)
    cells = []
    with tempfile.TemporaryDirectory() as work:
        samples = []
        server = Server(a.bin, a.model, a.ranks, work)
        try:
            misses = 0
            while len(samples) < a.samples:
                s = make_sample(server, rng, a.context_tokens, a.blocks, a.format == "chatml")
                if s:
                    samples.append(s)
                    continue
                misses += 1
                if misses == 100:
                    sys.exit(f"no inner block edge cuts a needle in {a.context_tokens} tokens and {a.blocks} blocks")
            kept = {}
            if previous:
                other = [k for k, v in setting.items() if previous.get(k) != v]
                records = [sample_record(s) for s in samples]
                same = (previous["samples"] == records[: len(previous["samples"])] if a.extend
                        else previous["samples"] == records)
                if other or not same:
                    sys.exit(f"--update: {a.out} was made with another setting ({', '.join(other) or 'samples'})")
                if a.extend:
                    kept = {cell_key(c): c for c in previous["cells"]}
            for overlap, snap in repairs:
                runs = ["dense"] if overlap == 0 and snap == 0 and not a.skip_dense else []
                runs += [x for x in a.algorithms.split(",") if x]
                for algorithm in runs:
                    cell = {"algorithm": algorithm, "boundary_overlap": overlap if algorithm != "dense" else 0}
                    if snap:
                        cell["boundary_snap"] = snap
                    if algorithm == "star" and a.anchor_positions != "first":
                        cell["anchor_positions"] = a.anchor_positions
                    earlier = kept.get(cell_key(cell), {"right": 0, "answers": []})
                    right, answers = earlier["right"], list(earlier["answers"])
                    for s in samples[len(answers):]:
                        pred = server.generate(s["context_ids"], s["query_ids"], algorithm, s["block_size"],
                                               overlap, snap, a.anchor_positions)
                        right += s["value"] in pred
                        answers.append(pred.strip())
                    cells.append({**cell, "right": right, "samples": len(samples), "answers": answers})
                    print(f"{algorithm:10s} overlap {overlap:4d} snap {snap:4d} {cell.get('anchor_positions', '')}: "
                          f"{right}/{len(samples)}", flush=True)
        finally:
            server.stop()
    if previous:
        fresh = {cell_key(c): c for c in cells}
        cells = [fresh.pop(cell_key(c), c) for c in previous["cells"]] + list(fresh.values())
    result = {**setting, "samples": [sample_record(s) for s in samples], "cells": cells}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
