#!/usr/bin/python3
"""Which needle answers a blocked algorithm got wrong, split by whether the asked needle's sentence
lies inside one context block or straddles a block boundary.

  /usr/bin/python3 scripts/eval/needle_splits.py --model models/needle-llama --eval /tmp/matrix

Reads star-eval's output (results.json, tasks/<L>.jsonl, preds/<L>/<algorithm>.jsonl) and the
model's tokenizer.json (HF `tokenizers`). Blocks are star-eval's: ceil(context tokens / --blocks)
tokens each, BOS included. A needle cut by a block boundary is encoded in two pieces that never see each other
in Phase 1, which is where star and its relatives lose answers that dense attention gets.
"""
import argparse
import collections
import json
import math
import os
import re

from tokenizers import Tokenizer

QUERY = re.compile(r"special magic (\w+) for (.+?)\?")
SINGLE_VALUE_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
                      "niah_multikey_3")


def needle_span(tok, context, query):
  """Token span [start, end) of the asked needle in BOS + context, or None."""
  m = QUERY.search(query)
  if not m:
    return None
  begin = context.find(f" The special magic {m.group(1)} for {m.group(2)} is ")
  if begin < 0:
    return None
  end = context.index(".", begin + len(m.group(0))) + 1
  return 1 + len(tok.encode(context[:begin]).ids), 1 + len(tok.encode(context[:end]).ids)


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--model", required=True)
  ap.add_argument("--eval", required=True, help="star-eval --out directory")
  a = ap.parse_args()
  tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
  with open(os.path.join(a.eval, "results.json")) as f:
    results = json.load(f)
  blocks = results["blocks"]
  print("| length | algorithm | whole: right / all | split: right / all |")
  print("|---:|---|---:|---:|")
  for length in results["lengths"]:
    tasks = {}
    with open(os.path.join(a.eval, "tasks", f"{length}.jsonl")) as f:
      for line in f:
        t = json.loads(line)
        tasks[(t["task"], t["index"])] = t
    spans = {}
    for key, t in tasks.items():
      if key[0] in SINGLE_VALUE_TASKS:
        spans[key] = needle_span(tok, t["input_context"], t["input_query"])
    for algorithm in results["algorithms"]:
      counts = collections.Counter()
      with open(os.path.join(a.eval, "preds", str(length), algorithm + ".jsonl")) as f:
        for line in f:
          p = json.loads(line)
          span = spans.get((p["task"], p["index"]))
          if span is None:
            continue
          block = math.ceil(p["context_tokens"] / blocks)
          split = span[0] // block != (span[1] - 1) // block
          counts[(split, p["score"] == 1.0)] += 1
      whole = f"{counts[(False, True)]} / {counts[(False, True)] + counts[(False, False)]}"
      cut = f"{counts[(True, True)]} / {counts[(True, True)] + counts[(True, False)]}"
      print(f"| {length} | {algorithm} | {whole} | {cut} |")


if __name__ == "__main__":
  main()
