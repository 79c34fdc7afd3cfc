#!/usr/bin/python3
"""Merges star-eval output folders of one model and one setting into one folder, as if one star-eval
run had made it: results.json (every cell), results.md (star-eval's tables) and preds/L/A.jsonl.

A large matrix runs fastest as many small star-eval processes (one per length, column and task, in
parallel on one GPU or across machines); this puts their folders back together.

  /usr/bin/python3 scripts/eval/merge_results.py --out docs/eval/smollm2_gpu OUT1 OUT2 ...   # any depth:
      every results.json under the folders given is read

The folders must agree on the model, seed, blocks, max_tokens, prompt format, haystack, backend and
KV type (else the merge stops, naming the field); a cell (task, length, column) found twice must
have the same score. Tasks follow star-eval's order (RULER's), columns the --columns order, then
the order they are first met. Tables print "–" for cells that no folder has.
"""
import argparse
import glob
import json
import os
import sys

TASK_ORDER = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
              "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"]
SHARED = ["model", "seed", "blocks", "max_tokens", "prompt_format", "haystack", "backend", "kv_dtype"]


def fmt(v):
  return "–" if v is None else f"{v:.1f}"


def tables(cells, tasks, lengths, columns):
  score = {(c["task"], c["length"], c["algorithm"]): 100.0 * c["score"] for c in cells}
  out = []
  for length in lengths:
    here = [t for t in tasks if any((t, length, a) in score for a in columns)]
    if not here:
      continue
    cols = [a for a in columns if any((t, length, a) in score for t in here)]
    head = "| task | " + " | ".join(cols) + " |\n|---|" + "---:|" * len(cols) + "\n"

    def mean(a):
      vals = [score[(t, length, a)] for t in here if (t, length, a) in score]
      return sum(vals) / len(vals) if len(vals) == len(here) else None

    body = "".join("| " + t + " | " + " | ".join(fmt(score.get((t, length, a))) for a in cols) + " |\n" for t in here)
    out.append(f"### {length} tokens: score (%)\n\n" + head + body + "| **mean** | " +
               " | ".join(fmt(mean(a)) for a in cols) + " |\n")
    if "dense" in cols:
      def diff(t, a):
        x, d = score.get((t, length, a)), score.get((t, length, "dense"))
        return None if x is None or d is None else x - d

      def fmt_diff(v):
        return "–" if v is None else f"{v:+.1f}"

      dm = mean("dense")
      body = "".join("| " + t + " | " + " | ".join(fmt_diff(diff(t, a)) for a in cols) + " |\n" for t in here)
      means = [None if mean(a) is None or dm is None else mean(a) - dm for a in cols]
      out.append(f"### {length} tokens: difference to dense (points)\n\n" + head + body + "| **mean** | " +
                 " | ".join(fmt_diff(m) for m in means) + " |\n")
  return "".join(t + "\n" for t in out)


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--out", required=True)
  ap.add_argument("--columns", default="", help="comma-separated column order (others follow as met)")
  ap.add_argument("inputs", nargs="+")
  a = ap.parse_args()

  found = sorted(f for d in a.inputs for f in glob.glob(os.path.join(d, "**", "results.json"), recursive=True))
  if not found:
    sys.exit("no results.json under " + " ".join(a.inputs))
  first, cells, configs, samples = None, {}, {}, set()
  preds = {}  # (length, column) -> {task: lines}
  for path in found:
    r = json.load(open(path))
    if first is None:
      first = r
    for key in SHARED:
      if r.get(key) != first.get(key):
        sys.exit(f"{path}: {key} is {r.get(key)!r}, {found[0]} has {first.get(key)!r}")
    configs.update(r["configs"])
    for c in r["cells"]:
      k = (c["task"], c["length"], c["algorithm"])
      if k in cells and cells[k]["score"] != c["score"]:
        sys.exit(f"{path}: cell {k} scores {c['score']}, another folder has {cells[k]['score']}")
      cells[k] = c
      samples.add(c["samples"])
    base = os.path.dirname(path)
    for p in glob.glob(os.path.join(base, "preds", "*", "*.jsonl")):
      length, column = int(os.path.basename(os.path.dirname(p))), os.path.basename(p)[:-len(".jsonl")]
      for line in open(p):
        task = json.loads(line)["task"]
        preds.setdefault((length, column), {}).setdefault(task, []).append(line)

  order = [c for c in a.columns.split(",") if c]
  for _, _, col in cells:
    if col not in order:
      order.append(col)
  columns = [c for c in order if any(k[2] == c for k in cells)]
  tasks = [t for t in TASK_ORDER if any(k[0] == t for k in cells)]
  tasks += sorted({k[0] for k in cells} - set(tasks))
  lengths = sorted({k[1] for k in cells})
  ordered = sorted(cells.values(), key=lambda c: (c["length"], columns.index(c["algorithm"]), tasks.index(c["task"])))

  merged = {k: first[k] for k in SHARED if k in first}
  merged.update({"samples": max(samples), "samples_per_cell": sorted(samples), "tasks": tasks, "lengths": lengths,
                 "algorithms": columns, "configs": {c: configs[c] for c in columns if c in configs},
                 "merged_from": len(found), "cells": ordered})
  os.makedirs(a.out, exist_ok=True)
  with open(os.path.join(a.out, "results.json"), "w") as f:
    json.dump(merged, f, indent=2, sort_keys=True)
    f.write("\n")
  per_cell = (f"{max(samples)} samples per task" if len(samples) == 1 else
              "samples per cell: " + ", ".join(map(str, sorted(samples))))
  md = (f"# star-eval: {first['model']}\n\n{per_cell}, seed {first['seed']}, {first['blocks']} blocks, "
        f"{first.get('backend', 'cpu')} backend, KV {first.get('kv_dtype')}, {first['prompt_format']} prompts, "
        f"{first['haystack']} haystacks; RULER string match (all expected strings present); merged from "
        f"{len(found)} star-eval runs.\n\n" + tables(ordered, tasks, lengths, columns))
  with open(os.path.join(a.out, "results.md"), "w") as f:
    f.write(md)
  for (length, column), by_task in preds.items():
    d = os.path.join(a.out, "preds", str(length))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, column + ".jsonl"), "w") as f:
      for t in tasks:
        f.writelines(by_task.get(t, []))
  print(md)


if __name__ == "__main__":
  main()
