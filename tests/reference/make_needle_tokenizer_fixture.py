#!/usr/bin/python3
"""Records how the HF `tokenizers` library encodes text with models/needle-llama/tokenizer.json,
for tests/tokenizer/needle_tokenizer_test.cpp: retrieval samples of the kind the model was trained
on, star-eval's other task texts, and odd strings (Unicode, digits, whitespace runs).

Run: /usr/bin/python3 tests/reference/make_needle_tokenizer_fixture.py
Writes tests/fixtures/tokenizer/needle_cases.json.
"""
import json
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "train"))
import retrieval_data as data  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "tokenizer" / "needle_cases.json"
ODD = ["", " ", "  12345", "007 and 0.5%", "VAR QWERT = VAR ASDFG.", "1. apple\n2. pear\n", "café über 日本語 😀",
       "tab\there\r\nnew line", "The special magic code for quiet tiger is k3x9q2.", "<|end_of_text|> is plain text",
       "a  b   c    d", "x7k2 9z1q ezs wfn", "Question: What are the 3 most frequently appeared coded words?"]


def main():
  tok = Tokenizer.from_file(str(ROOT / "models" / "needle-llama" / "tokenizer.json"))
  rng = random.Random(2024)
  texts = list(ODD)
  for _ in range(40):
    s = data.sample(rng, lambda t: len(t.split()), rng.randint(20, 200), rng.randint(0, 6),
                    rng.choice(["single", "multivalue"]))
    texts += [s.context, s.query, s.answer]
  cases = {"texts": texts, "ids": [tok.encode(t, add_special_tokens=False).ids for t in texts]}
  OUT.write_text(json.dumps(cases, ensure_ascii=False, indent=0) + "\n")
  print(f"wrote {OUT} ({len(texts)} texts)")


if __name__ == "__main__":
  main()
