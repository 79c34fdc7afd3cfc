#!/usr/bin/python3
"""Reference logits from HF transformers' LlamaForCausalLM for models made by star-mkmodel.

Run with Debian's python3 (python3-torch) and PyPI's transformers:
    /usr/bin/python3 tests/reference/make_llama_fixtures.py --mkmodel build/star-mkmodel \
        --out tests/fixtures/llama/transformers_logits.json
The C++ test (tests/engine/transformers_reference_test.cpp) rebuilds each model with the same
star-mkmodel arguments and compares its logits with these.
"""
import argparse
import json
import random
import subprocess
import tempfile

import torch
import transformers
from transformers import LlamaForCausalLM

MODELS = [
    # Llama 3.1 rope scaling, GQA and tied embeddings (the tiny preset), float32 weights.
    {"name": "tiny-f32", "args": ["--preset", "tiny", "--seed", "7", "--max-positions", "16384"]},
    # bfloat16 weights, untied output projection, GQA ratio 4.
    {"name": "tiny-bf16-untied", "args": ["--preset", "tiny", "--seed", "11", "--dtype", "bf16", "--no-tie",
                                          "--heads", "8", "--kv-heads", "2", "--max-positions", "16384"]},
]
TOKENS = 40
ROWS = [0, 7, 19, 33, 39]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkmodel", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "models": []}
    for spec in MODELS:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([a.mkmodel, "--out", d, *spec["args"]], check=True, stdout=subprocess.DEVNULL)
            model = LlamaForCausalLM.from_pretrained(d, torch_dtype=torch.float32).eval()
            vocab = model.config.vocab_size
            rng = random.Random(spec["name"])
            ids = [rng.randrange(vocab) for _ in range(TOKENS)]
            cases = []
            for start in (0, 9000):
                positions = list(range(start, start + TOKENS))
                with torch.no_grad():
                    logits = model(input_ids=torch.tensor([ids]), position_ids=torch.tensor([positions])).logits[0]
                cases.append({
                    "ids": ids,
                    "positions": positions,
                    "rows": ROWS,
                    "logits": [[round(float(x), 6) for x in logits[r]] for r in ROWS],
                })
            out["models"].append({"name": spec["name"], "mkmodel_args": spec["args"], "cases": cases})
    with open(a.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
