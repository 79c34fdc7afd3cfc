#!/usr/bin/python3
"""Copies a Llama GGUF with another `llama.context_length`, for kernel benchmarks past a trained
model's window (starserve refuses positions beyond the model's context length).

The weights, the RoPE base and everything else stay as they are: past its trained window the model's
answers are not to be trusted, but its attention keeps the peaked shape training gave it, which is
what a Skip Softmax measurement needs. Needs PyPI's `gguf` (scripts/setup.sh installs it with the
references).

    scripts/bench/gguf_context_length.py ~/.cache/starserve/SmolLM2-135M-Instruct.Q4_1.gguf \
        /tmp/smollm2-32k.gguf 32768
"""
import argparse
import shutil

from gguf import GGUFReader


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("copy")
    ap.add_argument("context_length", type=int)
    a = ap.parse_args()
    shutil.copyfile(a.source, a.copy)
    reader = GGUFReader(a.copy, "r+")
    field = reader.get_field("llama.context_length")
    if field is None:
        raise SystemExit(f"{a.source}: no llama.context_length")
    old = int(field.parts[field.data[0]][0])
    field.parts[field.data[0]][0] = a.context_length
    reader.data.flush()
    print(f"{a.copy}: llama.context_length {old} -> {a.context_length}")


if __name__ == "__main__":
    main()
