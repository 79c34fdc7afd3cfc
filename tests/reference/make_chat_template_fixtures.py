#!/usr/bin/python3
"""Builds tests/fixtures/chat/chat_templates.json: the text transformers' apply_chat_template
renders for Meta's Llama 3 Instruct and Llama 2 chat templates (copied below from their
tokenizer_config.json files) on a set of conversations, with add_generation_prompt=True. The
star-openai renderer (src/http/chat_render.cpp) must reproduce each text byte for byte.

Run: /usr/bin/python3 tests/reference/make_chat_template_fixtures.py
Uses the tokenizer fixtures in tests/fixtures/tokenizer only to make the tokenizer objects.
"""
import json
from pathlib import Path

from transformers import PreTrainedTokenizerFast

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "chat" / "chat_templates.json"

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")

LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
    "{% endfor %}")

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Who wrote Hamlet?"}],
    [{"role": "system", "content": "  Use the notes below.\nNote 1: the fox.\n"},
     {"role": "user", "content": "  What did the fox do?  "}],
    [{"role": "user", "content": "First question"}, {"role": "assistant", "content": " First answer. "},
     {"role": "user", "content": "Second question\n"}],
    [{"role": "system", "content": "S"}, {"role": "user", "content": "q1"},
     {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"},
     {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3 with unicode: caf\u00e9 \u2603"}],
    [{"role": "system", "content": "sys"}, {"role": "user", "content": "   "}],
]


def tokenizer(name, bos, eos, template):
    t = PreTrainedTokenizerFast(tokenizer_file=str(ROOT / "fixtures" / "tokenizer" / name),
                                bos_token=bos, eos_token=eos)
    t.chat_template = template
    return t


def main():
    formats = [("llama3", tokenizer("llama3_tokenizer.json", "<|begin_of_text|>", "<|eot_id|>", LLAMA3)),
               ("llama2", tokenizer("llama2_tokenizer.json", "<s>", "</s>", LLAMA2))]
    cases = []
    for name, tok in formats:
        for messages in CONVERSATIONS:
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            cases.append({"format": name, "bos": tok.bos_token, "eos": tok.eos_token, "messages": messages,
                          "rendered": text})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
