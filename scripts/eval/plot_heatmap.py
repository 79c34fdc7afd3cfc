#!/usr/bin/python3
"""Draws star-eval's results.json: per length, a heatmap of task x algorithm (score in percent) beside
the same minus dense; and, with several lengths, each task's score against length per algorithm.

  /usr/bin/python3 scripts/eval/plot_heatmap.py OUT/results.json   # writes OUT/heatmap_<L>.png, OUT/by_length.png
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def grid(cells, tasks, algorithms, length):
  m = np.full((len(tasks), len(algorithms)), np.nan)
  for c in cells:
    if c["length"] == length and c["task"] in tasks and c["algorithm"] in algorithms:
      m[tasks.index(c["task"]), algorithms.index(c["algorithm"])] = 100.0 * c["score"]
  return m


def annotate(ax, m, fmt):
  for i in range(m.shape[0]):
    for j in range(m.shape[1]):
      if not np.isnan(m[i, j]):
        ax.text(j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=7)


def heatmap(results, length, path):
  tasks, algorithms = results["tasks"], results["algorithms"]
  m = grid(results["cells"], tasks, algorithms, length)
  panels = [(m, "score (%)", "viridis", 0, 100, "{:.0f}")]
  if "dense" in algorithms:
    rel = m - m[:, [algorithms.index("dense")]]
    panels.append((rel, "difference to dense (points)", "RdBu", -100, 100, "{:+.0f}"))
  fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 0.45 * len(tasks) + 2.5))
  axes = np.atleast_1d(axes)
  for ax, (data, title, cmap, lo, hi, fmt) in zip(axes, panels):
    im = ax.imshow(data, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
    ax.set_xticks(range(len(algorithms)), algorithms, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(tasks)), tasks, fontsize=8)
    ax.set_title(f"{title}, {length} tokens", fontsize=10)
    annotate(ax, data, fmt)
    fig.colorbar(im, ax=ax, fraction=0.04)
  fig.suptitle(f"{os.path.basename(results['model'].rstrip('/'))}: {results['samples']} samples per cell, "
               f"{results['blocks']} blocks", fontsize=10)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def by_length(results, path):
  tasks, algorithms, lengths = results["tasks"], results["algorithms"], sorted(results["lengths"])
  cols = min(4, len(tasks))
  rows = (len(tasks) + cols - 1) // cols
  fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
  for k, task in enumerate(tasks):
    ax = axes[k // cols][k % cols]
    for a in algorithms:
      ys = [100.0 * next((c["score"] for c in results["cells"]
                          if c["task"] == task and c["algorithm"] == a and c["length"] == n), np.nan) for n in lengths]
      ax.plot(lengths, ys, marker="o", label=a)
    ax.set_title(task, fontsize=9)
    ax.set_ylim(-5, 105)
    ax.set_xticks(lengths)
    ax.tick_params(labelsize=7)
  for k in range(len(tasks), rows * cols):
    axes[k // cols][k % cols].axis("off")
  axes[0][0].legend(fontsize=6)
  fig.supxlabel("tokens")
  fig.supylabel("score (%)")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("results")
  args = p.parse_args()
  with open(args.results) as f:
    results = json.load(f)
  out = os.path.dirname(os.path.abspath(args.results))
  for length in results["lengths"]:
    heatmap(results, length, os.path.join(out, f"heatmap_{length}.png"))
  if len(results["lengths"]) > 1:
    by_length(results, os.path.join(out, "by_length.png"))
  print(f"wrote heatmaps to {out}")


if __name__ == "__main__":
  main()
