#!/usr/bin/python3
"""Builds the tokenizer.json fixtures for tests/tokenizer with the HF `tokenizers` library.

Trains three small tokenizers on a corpus generated here: Llama 3 style (Split(llama3 regex,
isolated) + ByteLevel, ignore_merges, Llama 3 special tokens), GPT-2 style (ByteLevel with its own
regex) and Llama 2 style (byte_fallback BPE over "\u2581"-marked text), and records the ids HF
produces for a few hundred varied strings, with and without special-token parsing, plus HF's
decoding of id sequences that split or break UTF-8. Deterministic: same library version, same
output.

Run: /usr/bin/python3 tests/reference/make_tokenizer_fixtures.py
Writes tests/fixtures/tokenizer/{llama3,gpt2,llama2}_tokenizer.json and cases.json.
"""
import json
import os
import random
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

from tokenizers import (Regex, Tokenizer, decoders, models, normalizers,  # noqa: E402
                        pre_tokenizers, processors, trainers)

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
            "<|end_header_id|>"]
UNREACHABLE = [" zzqx", " tokenizerattention", "unicodepattern"]
OUT_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "tokenizer"

WORDS = ("the a an of to and in is was for on that with as it he she they we you I his her "
         "their be at by this from or had not but what all were when there can said which do "
         "time little girl boy named Lily Tom day play park ball big red happy friend mother "
         "house tree dog cat sun water run jump look found wanted went saw loved tokenizer "
         "attention context block query model server request merge byte unicode pattern").split()
CODE = [
    "def f(x):\n    return x * 2\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }\n",
    "if (x != nullptr && y->next) {\n\treturn -1;\n}\n",
    "std::vector<int32_t> ids = tok.encode(\"hello\");\n",
    "SELECT id, name FROM users WHERE age >= 18;\n",
    "{\"key\": [1, 2, 3], \"nested\": {\"ok\": true}}\n",
]
UNICODE = ["café", "naïve", "Ångström", "Straße", "über", "日本語", "中文字符", "한국어", "Привет",
           "мир", "Ελληνικά", "שלום", "مرحبا", "😀", "🚀", "👍🏽", "e\u0301", "n\u0303",
           "नमस्ते", "ไทย", "€100", "½", "²³", "Ⅻ"]


def corpus(rng):
    lines = []
    for _ in range(6000):
        kind = rng.random()
        if kind < 0.6:
            n = rng.randint(3, 14)
            words = [rng.choice(WORDS) for _ in range(n)]
            if rng.random() < 0.3:
                words[0] = words[0].capitalize()
            s = " ".join(words)
            s += rng.choice([".", "!", "?", ",", "", "'s", "'ll go."])
            lines.append(s)
        elif kind < 0.75:
            lines.append(rng.choice(CODE))
        elif kind < 0.85:
            lines.append(" ".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 6))))
        else:
            lines.append(" ".join(str(rng.randint(0, 10 ** rng.randint(1, 8))) for _ in range(4)))
    return lines


def train_llama3(lines):
    """Llama 3 style: Split(llama3 regex) + ByteLevel, ignore_merges, BOS from the template."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer=trainer)
    # Whole words no merge sequence builds: only ignore_merges emits them as one token, as the
    # Llama 3 vocabulary needs for some of its tokens.
    spec = json.loads(tok.to_str())
    for word in UNREACHABLE:
        spec["model"]["vocab"][word.replace(" ", "\u0120")] = len(spec["model"]["vocab"])
    tok = Tokenizer.from_str(json.dumps(spec))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def train_gpt2(lines):
    """GPT-2 style: ByteLevel(use_regex=True) alone, merges applied to every pre-token."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer=trainer)
    return tok


def train_llama2(lines):
    """Llama 2 style: BPE with byte_fallback, Prepend("▁") + Replace(" ", "▁") normalizer,
    <unk> <s> </s> then the 256 byte pieces as ordinary vocabulary entries."""
    byte_pieces = ["<0x%02X>" % b for b in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                           normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=["<unk>", "<s>", "</s>"] + byte_pieces,
                                  limit_alphabet=60, show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer)
    spec = json.loads(tok.to_str())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] not in byte_pieces]
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def without_added_tokens(tok):
    """The same model with no added tokens: HF then encodes special-token text as plain text,
    which is what our parse_special=false promises."""
    spec = json.loads(tok.to_str())
    spec["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(spec))


def test_strings(rng):
    s = [
        "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "hello", "Hello world", " hello",
        "hello ", "hello  ", "hello\n", "hello   world", "hello\t\tworld", "a\r\nb\r\n\r\nc",
        "trailing spaces   ", "   leading", "line one\nline two\n\nline four",
        "1", "12", "123", "1234", "1234567", "3.14159", "12,345,678.90", "x1y22z333w4444",
        "In 2024 we had 1000000 users", "phone: +1-555-0100",
        "don't", "DON'T", "Don'T", "I'm", "I'M", "you're", "YOU'RE", "we've", "WE'VE", "she'll",
        "SHE'LL", "he'd", "HE'D", "it's", "IT'S", "It'S", "'s", "'S", "''", "'hello'", "o'clock",
        "rock'n'roll", "Tom's dog's ball",
        "café", "naïve", "Ångström", "Straße", "日本語", "中文字符和English混合", "한국어 텍스트",
        "Привет, мир!", "Ελληνικά", "שלום עולם", "مرحبا بالعالم", "😀", "😀😀", "🚀 launch",
        "👍🏽", "👨‍👩‍👧", "e\u0301", "cafe\u0301", "n\u0303o", "a\u0308\u0301", "नमस्ते", "ไทย",
        "€100", "½ cup", "x² + y³", "Ⅻ", "\u00a0nbsp", "a\u3000b", "a\u2028b", "a\u0085b",
        "a\u200bb", "zero\u200dwidth", "\ufeffbom", "tab\there", "mixed \t \n whitespace",
        "!!!", "?!", "...", "—", "«quoted»", "“smart quotes”", "(parentheses)", "[brackets]",
        "a+b=c", "x->y", "a::b", "#include <vector>", "<html><body>hi</body></html>",
        "https://example.com/path?q=1&r=2", "user@example.com", "C:\\Windows\\System32",
        "   \n\n   ", "end.\n", "word\n\n", "\n\nword", " \t\n", "a \n b",
    ]
    s += CODE
    s += [
        "<|begin_of_text|>Hello", "Hello<|eot_id|>", "<|eot_id|>", "<|eot_id|><|eot_id|>",
        "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "text <|end_of_text|> more text", "<|eot_id", "eot_id|>", "<|eot_id|",
        "<|begin_of_text|><|begin_of_text|>x", "a<|eot_id|>b<|end_of_text|>c",
        "  <|eot_id|>  ", "\n<|eot_id|>\n", "<|EOT_ID|>", "<|unknown_special|>",
        " zzqx", "zzqx", "a zzqx b", "the tokenizerattention", "unicodepattern!", " unicodepattern",
        "<s>Hello", "Hi</s>", "a <s> b </s> c", "<unk>", "<s><s>", " <s> ", "<|endoftext|>x",
    ]
    for _ in range(230):
        kind = rng.random()
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.45:
                w = rng.choice(WORDS)
                parts.append(w.upper() if rng.random() < 0.1 else w)
            elif r < 0.55:
                parts.append(rng.choice(UNICODE))
            elif r < 0.65:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
            elif r < 0.72:
                parts.append(rng.choice(["'s", "'S", "'ll", "'LL", "'re", "'Ve", "'d", "'M", "'t"]))
            elif r < 0.8:
                parts.append(rng.choice(["!", "?", ",", ".", ";", ":", "(", ")", "\"", "-", "...",
                                         "/", "**", "=="]))
            elif r < 0.9:
                parts.append(rng.choice([" ", "  ", "\t", "\n", "\r\n", " \n", "\n\n", "   "]))
            elif r < 0.95 and kind < 0.3:
                parts.append(rng.choice(SPECIALS))
            else:
                parts.append("".join(chr(rng.randint(0x20, 0x7e)) for _ in range(rng.randint(1, 8))))
        joiner = rng.choice(["", " ", " "])
        s.append(joiner.join(parts))
    # Long inputs exercise long pre-tokens and many merges.
    s.append(" ".join(rng.choice(WORDS) for _ in range(400)))
    s.append("a" * 300)
    s.append("9" * 100)
    s.append(" " * 50 + "x")
    return s


def decode_cases(tok, rng):
    """Id sequences with their HF decoding, including byte tokens that split or break UTF-8."""
    vocab = tok.get_vocab()
    byte_ids = sorted(vocab[c] for c in pre_tokenizers.ByteLevel.alphabet())
    cases = []
    for text in ["日本語", "😀!", "café", "👍🏽"]:
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append(ids[:-1])
        cases.append(ids[1:])
    for _ in range(40):
        ids = [rng.choice(byte_ids) if rng.random() < 0.6 else rng.randrange(tok.get_vocab_size())
               for _ in range(rng.randint(1, 10))]
        cases.append(ids)
    return [{"ids": ids, "skip_special": tok.decode(ids, skip_special_tokens=True),
             "keep_special": tok.decode(ids, skip_special_tokens=False)} for ids in cases]


def encode_cases(tok, texts, with_bos):
    plain = without_added_tokens(tok)
    out = {"ids_parse_special": [], "ids_plain": [], "ids_with_bos": {}}
    for i, text in enumerate(texts):
        ids = tok.encode(text, add_special_tokens=False).ids
        out["ids_parse_special"].append(ids)
        out["ids_plain"].append(plain.encode(text, add_special_tokens=False).ids)
        if with_bos and i % 10 == 0:
            out["ids_with_bos"][str(i)] = tok.encode(text, add_special_tokens=True).ids
    return out


def main():
    lines = corpus(random.Random(1234))
    rng = random.Random(99)
    texts = test_strings(rng)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    fixture = {"source": "tests/reference/make_tokenizer_fixtures.py (tokenizers %s)"
               % __import__("tokenizers").__version__, "texts": texts, "tokenizers": {}}
    configs = {
        "llama3": (train_llama3, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
        "gpt2": (train_gpt2, {"bos_token": None, "eos_token": {"content": "<|endoftext|>"}}),
        "llama2": (train_llama2, {"bos_token": "<s>", "eos_token": "</s>"}),
    }
    for name, (train, config) in configs.items():
        tok = train(lines)
        file = "%s_tokenizer.json" % name
        (OUT_DIR / file).write_text(tok.to_str(pretty=False))
        entry = {"file": file, "config": config}
        entry.update(encode_cases(tok, texts, with_bos=name != "gpt2"))
        if name != "llama2":  # Llama 2's ByteFallback decoder writes one U+FFFD per bad byte token
            entry["decode"] = decode_cases(tok, rng)
        fixture["tokenizers"][name] = entry
    (OUT_DIR / "cases.json").write_text(json.dumps(fixture, ensure_ascii=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
