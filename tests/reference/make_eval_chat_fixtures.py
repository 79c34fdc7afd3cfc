#!/usr/bin/python3
"""Builds tests/fixtures/chat/eval_chat_smollm2.json: star-eval's chat prompts as RULER makes them
for an instruction-tuned model, rendered by transformers' apply_chat_template
(add_generation_prompt=True) with SmolLM2-135M-Instruct's own template (read from its GGUF): one
user message holding the task's context and question, then the answer prefix, leading whitespace
stripped, after the assistant header. src/eval/eval_prompt.cpp must give the same text, split
where the question starts.

Run: scripts/fetch_models.sh && /usr/bin/python3 tests/reference/make_eval_chat_fixtures.py
Uses tests/fixtures/tokenizer/gpt2_tokenizer.json only to make a tokenizer object.
"""
import json
import subprocess
from pathlib import Path

import gguf
import transformers
from transformers import PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "chat" / "eval_chat_smollm2.json"

NOISE = " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
LICENSE = (" This License applies to any program or other work which contains a notice placed by the copyright"
           " holder saying it may be distributed under the terms of this General Public License.")

SAMPLES = [
    {"context": NOISE * 3 + " The special magic number for lizard is 50813." + NOISE * 2,
     "question": "\nWhat is the special magic number for lizard?",
     "answer_prefix": " The special magic number for lizard is"},
    {"context": LICENSE + " The special magic code for ribbon is 6kbada." + LICENSE,
     "question": "\nWhat is the special magic code for ribbon?",
     "answer_prefix": " The special magic code for ribbon is"},
    {"context": NOISE + " VAR ABCDE = 12345." + NOISE + " VAR FGHIJ = VAR ABCDE.",
     "question": "\nQuestion: Find all variables that are assigned the value 12345 in the text above.",
     "answer_prefix": " Answer: According to the chain of variable assignments in the text above, 2 variables are "
                      "assigned the value 12345, they are:"},
    {"context": "Below is a numbered list of words.\n1. apple\n2. pear\n3. apple\n",
     "question": "\nQuestion: What are the 1 most common words in the above list?",
     "answer_prefix": " Answer: The top 1 words that appear most often in the list are:"},
]


def main():
    path = subprocess.run([str(ROOT / "scripts" / "fetch_models.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    template = gguf.GGUFReader(path).fields["tokenizer.chat_template"].contents()
    tok = PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "tests" / "fixtures" / "tokenizer" / "gpt2_tokenizer.json"))
    tok.chat_template = template
    cases = []
    for s in SAMPLES:
        messages = [{"role": "user", "content": s["context"] + s["question"]}]
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        cases.append(dict(s, rendered=rendered + s["answer_prefix"].lstrip()))
    OUT.write_text(json.dumps({"source": f"tests/reference/make_eval_chat_fixtures.py (transformers "
                                         f"{transformers.__version__}, {Path(path).name})",
                               "chat_template": template, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
