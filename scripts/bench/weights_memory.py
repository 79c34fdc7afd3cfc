#!/usr/bin/python3
"""Peak RSS and peak PSS of every process a command starts, read from /proc while it runs.

Weights stay in the memory-mapped model file, so two ranks on one host share their pages: each
rank's RSS counts the whole file, its PSS (proportional set size, /proc/<pid>/smaps_rollup) half of
the shared part. A weight copied into private memory would show up as PSS close to RSS.

    scripts/bench/weights_memory.py -- build/star-bench model --model m.gguf --decode-tokens 8
    scripts/bench/weights_memory.py -- mpirun --allow-run-as-root -np 2 build/star-run --model m --prompt hi

Prints one Markdown row a process (star-* processes only: mpirun and its helpers are left out):
peak RSS, and PSS at the moment the processes held the most memory together; and the file size of
--model when the command has one.
"""
import os
import subprocess
import sys
import time


def children_of(root):
    """Every live descendant of pid `root`."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in parents.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def read_kib(path, keys):
    values = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in keys:
                    values[name] = int(rest.split()[0])
    except OSError:
        pass
    return values


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    command = sys.argv[sys.argv.index("--") + 1:]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    peaks = {}  # pid -> [name, peak rss KiB]
    busiest, busiest_rss = {}, 0  # the sample with the most RSS in all: pid -> (pss, file-backed pss)
    while process.poll() is None:
        sample, sample_rss = {}, 0
        for pid in [process.pid] + children_of(process.pid):
            try:
                # argv[0], not comm: the star tools re-execute themselves through /proc/self/exe.
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    name = os.path.basename(f.read().split(b"\0")[0].decode())
            except OSError:
                continue
            if not name.startswith("star-"):
                continue
            rollup = read_kib(f"/proc/{pid}/smaps_rollup", {"Rss", "Pss", "Pss_File"})
            status = read_kib(f"/proc/{pid}/status", {"VmHWM"})
            if not rollup:
                continue
            peak = peaks.setdefault(pid, [name, 0])
            peak[1] = max(peak[1], status.get("VmHWM", rollup["Rss"]))
            sample[pid] = (rollup["Pss"], rollup.get("Pss_File", 0))
            sample_rss += rollup["Rss"]
        if sample_rss > busiest_rss:
            busiest, busiest_rss = sample, sample_rss
        time.sleep(0.05)
    if "--model" in command:
        model = command[command.index("--model") + 1]
        size = os.path.getsize(model) if os.path.isfile(model) else sum(
            os.path.getsize(os.path.join(model, f)) for f in os.listdir(model) if f.endswith(".safetensors"))
        print(f"model {model}: {size / 2**20:.1f} MiB of weights on disk")
    # PSS splits a page among the processes that have it mapped at that moment, so it is read at
    # one instant for all of them: the sample with the most resident memory in all.
    print("| process | pid | peak RSS MiB | PSS MiB | of which file-backed (the weights) |\n|---|---|---|---|---|")
    for pid, (name, rss) in sorted(peaks.items()):
        pss, file_backed = busiest.get(pid, (0, 0))
        print(f"| {name} | {pid} | {rss / 1024:.1f} | {pss / 1024:.1f} | {file_backed / 1024:.1f} |")
    sys.exit(process.returncode)


if __name__ == "__main__":
    main()
