#!/usr/bin/python3
"""Builds tests/fixtures/chat/chatml_smollm2.json: the text transformers' apply_chat_template
(add_generation_prompt=True) renders with SmolLM2-135M-Instruct's own ChatML template, read from
its GGUF (tokenizer.chat_template), on 12 conversations. The star-openai renderer
(src/http/chat_render.cpp) must reproduce each text byte for byte; the template is stored too, so
the test also reads the default system message out of it as the server does.

Run: scripts/fetch_models.sh && /usr/bin/python3 tests/reference/make_chatml_fixtures.py
Uses tests/fixtures/tokenizer/gpt2_tokenizer.json only to make a tokenizer object.
"""
import json
import subprocess
from pathlib import Path

import gguf
import transformers
from transformers import PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "chat" / "chatml_smollm2.json"

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Who wrote Hamlet?"}],
    [{"role": "user", "content": "First question"}, {"role": "assistant", "content": "First answer."},
     {"role": "user", "content": "Second question"}],
    [{"role": "system", "content": "S"}, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
     {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}],
    [{"role": "user", "content": "Unicode: caf\u00e9 \u2603 \u65e5\u672c\u8a9e \U0001F680 \u0645\u0631\u062d\u0628\u0627"}],
    [{"role": "user", "content": ""}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "empty system"}],
    [{"role": "user", "content": "  spaces kept  \n\n"}, {"role": "assistant", "content": " \tanswer\n"},
     {"role": "user", "content": "\nnext"}],
    [{"role": "system", "content": "Line one.\nLine two."}, {"role": "user", "content": "Summarise:\n- a\n- b"}],
    [{"role": "user", "content": "Code:\n```python\nprint('hi')\n```"}],
    [{"role": "user", "content": "q1"}, {"role": "assistant", "content": ""}, {"role": "user", "content": "q2"},
     {"role": "assistant", "content": "a2"}],
    [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Marker text <|im_end|> inside"}],
]


def main():
    path = subprocess.run([str(ROOT / "scripts" / "fetch_models.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    template = gguf.GGUFReader(path).fields["tokenizer.chat_template"].contents()
    tok = PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "tests" / "fixtures" / "tokenizer" / "gpt2_tokenizer.json"))
    tok.chat_template = template
    cases = [{"messages": m, "rendered": tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True)}
             for m in CONVERSATIONS]
    OUT.write_text(json.dumps({"source": f"tests/reference/make_chatml_fixtures.py (transformers "
                                         f"{transformers.__version__}, {Path(path).name})",
                               "chat_template": template, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
