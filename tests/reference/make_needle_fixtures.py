#!/usr/bin/python3
"""Reference data for the project's trained model (models/needle-llama) from HF's libraries.

Run with Debian's python3 (python3-torch) and PyPI's transformers and tokenizers:
    /usr/bin/python3 tests/reference/make_needle_fixtures.py --model models/needle-llama \
        --out tests/fixtures/needle/reference.json
Records the ids HF `tokenizers` gives for texts of the kinds the model reads (haystacks, needles,
questions, numbers, codes, odd bytes), and for a few needle prompts built the way star-run builds
them (BOS + context, then the question) transformers' LlamaForCausalLM logits at the last position
and its greedy answer. tests/engine/needle_model_test.cpp checks the C++ tokenizer and engine
against them.
"""
import argparse
import json
import os
import random
import sys

import torch
from tokenizers import Tokenizer
from transformers import LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "train"))
import retrieval_data as data  # noqa: E402

ANSWER_TOKENS = 8


def texts(rng):
  out = [data.NOISE, data.essay_sentence(rng), "", " ", "\n", "\n\n  \t", "12345", " 007", "x" * 40,
         "What is the special magic number for lantern?", "Ünïcödé — ☃ 日本語 🚀", "a\u00a0b", "\x01\x7f",
         "The special magic code for quiet harbor is 7k2mq9.", "<|begin_of_text|> not special here"]
  for _ in range(60):
    kind = rng.choice(["number", "word", "code"])
    key = data.make_key(rng, rng.choice(["word", "pair"]))
    out.append(data.needle(kind, key, data.make_value(rng, kind)) + data.single_query(kind, key))
  for _ in range(20):
    out.append("".join(data.essay_sentence(rng) for _ in range(rng.randint(1, 6))))
  for _ in range(20):
    out.append("".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0xa0, 0x800)]))
                       for _ in range(rng.randint(1, 30))))
  return out


def prompts(rng, tok):
  """(context, question, expected value) for needles in each haystack kind, about 300 tokens."""
  length = lambda t: len(tok.encode(t).ids)  # noqa: E731
  out = []
  for haystack, kind in [("noise", "number"), ("essay", "number"), ("essay", "word"), ("essay", "code")]:
    key = data.make_key(rng, "word")
    value = data.make_value(rng, kind)
    pieces = [data.needle(kind, key, value)]
    sentences = data.fill(rng, length, 280, haystack, pieces, taken={key.split()[-1]})
    out.append(("".join(sentences), data.single_query(kind, key), value))
  return out


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--model", required=True)
  ap.add_argument("--out", required=True)
  a = ap.parse_args()
  rng = random.Random(20261122)
  tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
  model = LlamaForCausalLM.from_pretrained(a.model, torch_dtype=torch.float32).eval()
  bos, eos = model.config.bos_token_id, model.config.eos_token_id
  cases = []
  for context, question, value in prompts(rng, tok):
    ids = [bos] + tok.encode(context).ids + tok.encode(question).ids
    with torch.no_grad():
      logits = model(torch.tensor([ids])).logits[0, -1]
      answer = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                              max_new_tokens=ANSWER_TOKENS, do_sample=False,
                              eos_token_id=eos, pad_token_id=eos)[0, len(ids):].tolist()
    cases.append({"context": context, "question": question, "value": value, "ids": ids,
                  "last_logits": [round(float(x), 6) for x in logits], "greedy_answer_ids": answer,
                  "greedy_answer_text": tok.decode([t for t in answer if t != eos])})
  os.makedirs(os.path.dirname(a.out), exist_ok=True)
  with open(a.out, "w") as f:
    json.dump({"tokenizer": [{"text": t, "ids": tok.encode(t).ids} for t in texts(rng)],
               "prompts": cases}, f, separators=(",", ":"))


if __name__ == "__main__":
  main()
