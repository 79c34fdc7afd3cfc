#!/usr/bin/python3
"""Checks that the C++ engine loads a trained model and gives the same greedy answers as
transformers' LlamaForCausalLM: samples held-out retrieval prompts, runs them through
build/star-run (dense) and through PyTorch, and compares the generated text.

  /usr/bin/python3 scripts/train/compare_with_engine.py --model /tmp/needle-llama --n 20
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import retrieval_data as data  # noqa: E402


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--model", required=True)
  p.add_argument("--star-run", default="build/star-run")
  p.add_argument("--n", type=int, default=10)
  p.add_argument("--length", type=int, default=512)
  p.add_argument("--seed", type=int, default=4242)
  args = p.parse_args()
  from tokenizers import Tokenizer
  from transformers import LlamaForCausalLM
  torch.set_num_threads(2)
  tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
  model = LlamaForCausalLM.from_pretrained(args.model, attn_implementation="eager").eval()
  bos, eos = model.config.bos_token_id, model.config.eos_token_id
  rng = random.Random(args.seed)
  samples = [data.sample(rng, lambda t: len(tok.encode(t).ids), args.length, rng.randint(0, 4), "single")
             for _ in range(args.n)]
  torch_preds = []
  for s in samples:
    seq = [bos] + tok.encode(s.context).ids + tok.encode(s.query).ids
    out = []
    with torch.no_grad():
      for _ in range(12):
        nxt = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
        if nxt == eos:
          break
        seq.append(nxt)
        out.append(nxt)
    torch_preds.append(tok.decode(out))
  with tempfile.TemporaryDirectory() as d:
    inp, outp = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
    with open(inp, "w") as f:
      for s in samples:
        f.write(json.dumps({"input_context": s.context, "input_query": s.query, "outputs": [s.answer.strip()]}) + "\n")
    subprocess.run([args.star_run, "--model", args.model, "--input", inp, "--output", outp, "--attention", "dense",
                    "--max-tokens", "12", "--log-level", "warn"], check=True)
    engine_preds = [json.loads(line)["pred"] for line in open(outp)]
  same = sum(a == b for a, b in zip(torch_preds, engine_preds))
  right = sum(s.answer.strip() in e for s, e in zip(samples, engine_preds))
  for s, t, e in zip(samples, torch_preds, engine_preds):
    print(f"expected {s.answer!r:12} torch {t!r:14} engine {e!r}")
  print(f"engine == torch on {same}/{len(samples)}; engine correct on {right}/{len(samples)}")
  sys.exit(0 if same == len(samples) else 1)


if __name__ == "__main__":
  main()
