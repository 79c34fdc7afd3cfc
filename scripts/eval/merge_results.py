#!/usr/bin/python3
"""Merges star-eval output folders of one model and one setting into one folder, as if one star-eval
run had made it: results.json (every cell), results.md (star-eval's tables) and preds/L/A.jsonl.

A large matrix runs fastest as many small star-eval processes (one per length, column and task, in
parallel on one GPU or across machines); this puts their folders back together.

  /usr/bin/python3 scripts/eval/merge_results.py --out docs/eval/smollm2_gpu OUT1 OUT2 ...   # any depth:
      every results.json under the folders given is read

The folders must agree on the model, seed, blocks, max_tokens, prompt format, haystack, backend, KV
type, rank count and, for the Debian haystack, its files and their characters of prose (else the
merge stops, naming the field; each column's own config is checked instead of the base attention
flags, which per-column flags such as --streaming-window change; folders from before star-eval
recorded the ranks and haystack files have none, and merge only with each other; a column config
without a field added since, such as boundary_snap or anchor_positions, is read at its default); a cell (task, length, column)
found twice must have the same score and is taken once, with its predictions, from the first folder
(in path order). A folder this script made can be merged again (with more runs of the same setting).
A column's config is kept per length (`configs_by_length`): star's anchor of
block / 4 differs by length. Folders under --out are skipped. The tables are star-eval's (every task
row and column at every length, "–" for a missing cell, each column's mean over the rows that every
column has). Tasks follow star-eval's order (RULER's), columns the --columns order, then the order
they are first met (path order).
"""
import argparse
import glob
import json
import os
import sys

# Attention config fields star-eval did not have when some folders were made: such a folder ran
# at the field's default, and merges with later ones as if it had recorded it.
FIELDS_ADDED_LATER = {"boundary_overlap": 0, "boundary_snap": 0, "anchor_positions": "first"}

TASK_ORDER = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
              "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe"]
SHARED = ["model", "seed", "blocks", "max_tokens", "prompt_format", "haystack", "backend", "kv_dtype", "ranks",
          "haystack_files", "haystack_chars"]


def percent(v, signed):
  return ("%+.1f" if signed else "%.1f") % (100.0 * v)


def tables(cells, tasks, lengths, columns):
  """star-eval's markdown_tables (src/eval/eval_matrix.cpp): every task row and every column at every
  length, "–" where a cell is missing, and each column's mean over the rows complete in every column."""
  score = {(c["task"], c["length"], c["algorithm"]): c["score"] for c in cells}
  out = ""
  for length in lengths:
    def mean(a):
      rows = [t for t in tasks if all((t, length, b) in score for b in columns)]
      return sum(score[(t, length, a)] for t in rows) / len(rows) if rows else None

    def table(relative):
      s = "| task |" + "".join(f" {a} |" for a in columns) + "\n|---|" + "---:|" * len(columns) + "\n"

      def cell(v, dense):
        if v is not None and not relative:
          return " " + percent(v, False) + " |"
        if v is not None and dense is not None:
          return " " + percent(v - dense, True) + " |"
        return " – |"

      for t in tasks:
        s += f"| {t} |" + "".join(cell(score.get((t, length, a)), score.get((t, length, "dense"))) for a in columns) + "\n"
      dense_mean = mean("dense") if "dense" in columns else None  # a merge of columns without dense has none
      s += "| **mean** |" + "".join(cell(mean(a), dense_mean) for a in columns)
      return s + "\n"

    out += f"### {length} tokens: score (%)\n\n" + table(False)
    if "dense" in columns:
      out += f"\n### {length} tokens: difference to dense (points)\n\n" + table(True)
    out += "\n"
  return out


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--out", required=True)
  ap.add_argument("--columns", default="", help="comma-separated column order (others follow as met)")
  ap.add_argument("inputs", nargs="+")
  a = ap.parse_args()

  out_dir = os.path.realpath(a.out)
  found = sorted(f for d in a.inputs for f in glob.glob(os.path.join(d, "**", "results.json"), recursive=True)
                 if not os.path.realpath(f).startswith(out_dir + os.sep))
  if not found:
    sys.exit("no results.json under " + " ".join(a.inputs))
  first, cells, configs, samples, runs = None, {}, {}, set(), 0
  preds = {}  # (length, column) -> {task: lines}, from the first folder that has the cell
  for path in found:
    r = json.load(open(path))
    runs += r.get("merged_from", 1)
    if first is None:
      first = r
    for key in SHARED:
      if r.get(key) != first.get(key):
        sys.exit(f"{path}: {key} is {r.get(key)!r}, {found[0]} has {first.get(key)!r}")
    new = set()
    for c in r["cells"]:
      k = (c["task"], c["length"], c["algorithm"])
      if k in cells:
        if cells[k]["score"] != c["score"]:
          sys.exit(f"{path}: cell {k} scores {c['score']}, another folder has {cells[k]['score']}")
        continue
      cells[k] = c
      new.add(k)
      samples.add(c["samples"])
      # A column's config may depend on the length (anchor = block / 4): kept per length.
      config = (r["configs_by_length"][c["algorithm"]][str(c["length"])] if "configs_by_length" in r
                else r["configs"][c["algorithm"]])
      config = {**FIELDS_ADDED_LATER, **config}
      known = configs.setdefault(c["algorithm"], {}).setdefault(str(c["length"]), config)
      if known != config:
        sys.exit(f"{path}: column {c['algorithm']} at {c['length']} tokens has another config than an earlier folder's")
    base = os.path.dirname(path)
    for p in glob.glob(os.path.join(base, "preds", "*", "*.jsonl")):
      length, column = int(os.path.basename(os.path.dirname(p))), os.path.basename(p)[:-len(".jsonl")]
      for line in open(p):
        task = json.loads(line)["task"]
        if (task, length, column) in new:
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
                 "algorithms": columns, "configs_by_length": {c: configs[c] for c in columns},
                 "merged_from": runs, "cells": ordered})
  os.makedirs(a.out, exist_ok=True)
  with open(os.path.join(a.out, "results.json"), "w") as f:
    json.dump(merged, f, indent=2, sort_keys=True)
    f.write("\n")
  per_cell = (f"{max(samples)} samples per task" if len(samples) == 1 else
              "samples per cell: " + ", ".join(map(str, sorted(samples))))
  md = (f"# star-eval: {first['model']}\n\n{per_cell}, seed {first['seed']}, {first['blocks']} blocks, "
        f"{first.get('backend', 'cpu')} backend, KV {first.get('kv_dtype')}, {first['prompt_format']} prompts, "
        f"{first['haystack']} haystacks; RULER string match (all expected strings present); merged from "
        f"{runs} star-eval runs.\n\n" + tables(ordered, tasks, lengths, columns))
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
