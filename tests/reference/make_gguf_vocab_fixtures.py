#!/usr/bin/python3
"""Expected token ids for SmolLM2-135M-Instruct's GGUF vocabulary (tokenizer.ggml.model "gpt2",
tokenizer.ggml.pre "smollm"), from HF's `tokenizers`.

Reads tokens, merges and token types from the GGUF with the `gguf` package and builds the
tokenizer HF ships for SmolLM2 (tokenizer.json): BPE over the vocabulary and merges, pre-tokenizer
Digits(individual_digits) then ByteLevel(add_prefix_space=False, use_regex=True), ByteLevel
decoder, the CONTROL tokens as special added tokens, no BOS. Records the ids of every text of
tests/fixtures/tokenizer/cases.json plus chat-shaped texts, with and without special-token parsing.
Only the texts and ids are committed, not the vocabulary.

Run: scripts/fetch_models.sh && /usr/bin/python3 tests/reference/make_gguf_vocab_fixtures.py
Writes tests/fixtures/tokenizer/smollm2_cases.json.
"""
import json
import os
import subprocess
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import gguf  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "tokenizer" / "smollm2_cases.json"
CONTROL = 3

CHAT_TEXTS = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>assistant\n4<|im_end|>",
    "<|endoftext|>",
    "<|im_end|><|im_start|>",
    "text<|im_end|>more text",
    "<repo_name>starserve<file_sep>src/main.cpp\nint main() {}\n",
    "<jupyter_code>print(12345)<jupyter_output>12345",
    "<|im_start|> user",
    "<|im_start",
    "im_start|>",
    "1234567890 numbers 0.001 1e-9 -42 3,141,592",
    "Tabs\tand\t\tmore\t\t\ttabs",
    "    four leading spaces and    inner runs    ",
    "\u00a0non-breaking\u00a0space and\u2003em space",
    "Emoji 👨‍👩‍👧‍👦 family and flags 🇫🇷🇯🇵",
    "Mixed scripts: English, Русский, 中文, العربية, हिन्दी",
    "```python\nfor i in range(10):\n    print(i ** 2)\n```\n",
]


def gguf_vocabulary(path):
    reader = gguf.GGUFReader(path)

    def field(name):
        return reader.fields[name].contents()

    if field("tokenizer.ggml.model") != "gpt2" or field("tokenizer.ggml.pre") != "smollm":
        raise SystemExit(f"{path}: expected a gpt2 vocabulary with the smollm pre-tokenizer")
    return field("tokenizer.ggml.tokens"), field("tokenizer.ggml.merges"), field("tokenizer.ggml.token_type")


def reference_tokenizer(tokens, merges, types):
    vocab = {t: i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ")) for m in merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, kind in zip(tokens, types) if kind == CONTROL])
    return tok


def main():
    path = subprocess.run([str(ROOT / "scripts" / "fetch_models.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    tokens, merges, types = gguf_vocabulary(path)
    with_specials = reference_tokenizer(tokens, merges, types)
    # parse_special off: special-token text is plain text, as for a tokenizer without added tokens
    # (tokenizers 0.19 has no split_special_tokens switch).
    plain = reference_tokenizer(tokens, merges, [0] * len(types))
    texts = json.loads((ROOT / "tests" / "fixtures" / "tokenizer" / "cases.json").read_text())["texts"]
    texts = texts + CHAT_TEXTS
    out = {
        "source": f"tests/reference/make_gguf_vocab_fixtures.py (tokenizers {tokenizers.__version__}, "
                  f"{Path(path).name})",
        "texts": texts,
        "ids_parse_special": [with_specials.encode(t, add_special_tokens=False).ids for t in texts],
        "ids_plain": [plain.encode(t, add_special_tokens=False).ids for t in texts],
    }
    OUT.write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {len(texts)} texts")


if __name__ == "__main__":
    main()
