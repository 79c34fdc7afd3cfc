#!/usr/bin/python3
"""Prints a star-eval matrix as one star-eval command per (length, column, task), most wanted first,
so that many small processes run it in parallel (on one GPU, 16 at a time; or across machines) and a
run cut short keeps every cell it finished. scripts/eval/merge_results.py puts the folders together.

  /usr/bin/python3 scripts/eval/matrix_jobs.py --bin build --model SmolLM2.gguf --out /tmp/m \\
      --backend cuda --lengths 2048,4096,8144 --samples 20 > jobs.txt
  xargs -P 16 -d '\n' -I CMD sh -c CMD < jobs.txt
  /usr/bin/python3 scripts/eval/merge_results.py --out docs/eval/smollm2_gpu /tmp/m

Columns: the algorithms (streaming with --streaming-sink/--streaming-window; ring is not in the
default list, as the CUDA backend has no ring pass), then per length star with anchor =
length / (4 · blocks) (a quarter block, up to the prompt's few tokens), star with --overlap, and star
with Skip Softmax at each --skip S, each as a one-column --variants file under OUT/variants (copy
that folder to the same path where jobs run on another machine). Each job writes OUT/L/COLUMN/TASK.
"""
import argparse
import json
import os
import shlex

RETRIEVAL = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
             "niah_multikey_3", "niah_multivalue", "niah_multiquery"]


def columns(a, length):
  cols = []
  for alg in a.algorithms.split(","):
    extra = ["--streaming-sink", str(a.streaming_sink), "--streaming-window", str(a.streaming_window)] \
        if alg == "streaming" else []
    cols.append((alg, ["--algorithms", alg] + extra))
  variants = {"star-anchor-quarter": {"algorithm": "star", "anchor_size": max(1, length // (4 * a.blocks))}}
  if a.overlap:
    variants[f"star-overlap{a.overlap}"] = {"algorithm": "star", "boundary_overlap": a.overlap}
  for s in [int(x) for x in a.skip.split(",") if x]:
    variants[f"star-skip{s}"] = {"algorithm": "star",
                                 "sparse_attention": {"algorithm": "skip_softmax", "threshold_scale_factor": s}}
  vdir = os.path.join(a.out, "variants")
  os.makedirs(vdir, exist_ok=True)
  for name, config in variants.items():
    path = os.path.join(vdir, f"{name}-{length}.json")
    with open(path, "w") as f:
      json.dump({name: config}, f)
    cols.append((name, ["--algorithms", "none", "--variants", path]))
  return cols


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--bin", required=True, help="folder with star-eval")
  ap.add_argument("--model", required=True)
  ap.add_argument("--out", required=True)
  ap.add_argument("--backend", default="cpu")
  # 8K as RULER sizes it: the 8,192 positions less the answer's 48 tokens.
  ap.add_argument("--lengths", default="2048,4096,8144")
  ap.add_argument("--tasks", default=",".join(RETRIEVAL))
  ap.add_argument("--algorithms", default="dense,star,no-anchor,pulsar-max_idf,pulsar-tfidf,pulsar-bm25,"
                  "pulsar-entropy,pulsar-even,streaming")
  ap.add_argument("--samples", type=int, default=20)
  ap.add_argument("--blocks", type=int, default=4)
  ap.add_argument("--max-tokens", type=int, default=48)
  ap.add_argument("--overlap", type=int, default=64, help="star's boundary_overlap column (0: none)")
  ap.add_argument("--skip", default="100,1000", help="Skip Softmax S of star's columns")
  ap.add_argument("--streaming-sink", type=int, default=4)
  ap.add_argument("--streaming-window", type=int, default=256)
  ap.add_argument("--extra", default="", help="more star-eval flags for every job (e.g. --haystack-root DIR)")
  a = ap.parse_args()
  for length in [int(x) for x in a.lengths.split(",")]:
    for name, flags in columns(a, length):
      for task in a.tasks.split(","):
        cmd = [os.path.join(a.bin, "star-eval"), "--backend", a.backend, "--model", a.model,
               "--out", os.path.join(a.out, str(length), name, task), "--lengths", str(length), "--tasks", task,
               "--samples", str(a.samples), "--blocks", str(a.blocks), "--max-tokens", str(a.max_tokens)]
        print(shlex.join(cmd + flags + shlex.split(a.extra)))


if __name__ == "__main__":
  main()
