#!/usr/bin/python3
"""Reference logits and greedy continuations of SmolLM2-135M-Instruct's Q4_1 GGUF, from HF
transformers' LlamaForCausalLM in float32 on the weights the `gguf` package dequantizes.

The model is built here rather than with from_pretrained(gguf_file=...): every tensor is
dequantized with gguf.quants.dequantize and attn_q/attn_k are un-permuted back from llama.cpp's
interleaved RoPE row order to HF's half-split order (the inverse of convert_hf_to_gguf.py's
permute), so the reference shares no code with starserve's adjacent-pair RoPE on the stored order.
Token ids come from HF `tokenizers` built from the GGUF vocabulary (make_gguf_vocab_fixtures.py).

Eight natural prompts of 200+ tokens (ChatML chat renderings, prose, code). Per prompt the fixture
keeps the ids, per position the top-16 logits and the logits of a few fixed ids, and the 64-token
greedy continuation (end-of-turn tokens do not stop it). All logits are float32 rounded to 1e-5.

Run: scripts/fetch_models.sh && /usr/bin/python3 tests/reference/make_smollm2_fixtures.py
Writes tests/fixtures/smollm2/reference_logits.json.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_gguf_vocab_fixtures import gguf_vocabulary, reference_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "tests" / "fixtures" / "smollm2" / "reference_logits.json"
TOP_K = 16
FIXED_IDS = [0, 2, 1000, 30000, 49151]
GREEDY_TOKENS = 64
MIN_PROMPT_TOKENS = 200

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chatml(messages):
    if messages[0]["role"] != "system":
        messages = [{"role": "system", "content": SYSTEM}] + messages
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


PROMPTS = [
    ("chat_photosynthesis", chatml([{"role": "user", "content": (
        "I am preparing a short lesson for a class of twelve-year-olds about how plants make their "
        "food. I want to explain photosynthesis without drowning them in chemistry, but I also do "
        "not want to say anything that is wrong. So far my outline says that leaves take in carbon "
        "dioxide from the air through tiny holes, roots bring up water from the soil, and sunlight "
        "gives the energy that turns these into sugar and oxygen. The green pigment, chlorophyll, "
        "is what catches the light. I am not sure how to talk about where the oxygen we breathe "
        "comes from, and whether I should mention that plants also respire at night. Could you "
        "check my outline, point out anything misleading, and suggest one simple experiment the "
        "children could do in the classroom over a week to see that plants need light? The lesson "
        "is forty minutes long, and I would like to finish with three quiz questions.")}])),
    ("chat_python_bug", chatml([{"role": "user", "content": (
        "My function is supposed to return the running average of a list, but the numbers look "
        "wrong. Here is the code:\n\n```python\ndef running_average(values):\n    result = []\n"
        "    total = 0\n    for i, v in enumerate(values):\n        total += v\n"
        "        result.append(total / i)\n    return result\n\n"
        "print(running_average([4, 8, 15, 16, 23, 42]))\n```\n\nWhen I run it I get a "
        "ZeroDivisionError on the very first element. I tried starting enumerate at one, but then "
        "the averages seemed shifted. What is the right fix, and is there a way to write this "
        "with itertools so that it works for any iterable, including a generator that I can only "
        "read once? I would also like to understand why my first attempt shifted the averages.")}])),
    ("chat_travel_multiturn", chatml([
        {"role": "user", "content": "I have three days in Lisbon in late October. What should I "
                                    "see?"},
        {"role": "assistant", "content": (
            "Lisbon in late October is lovely: mild weather and fewer crowds. On the first day, "
            "walk through Alfama, visit the São Jorge Castle and end at a miradouro for the "
            "sunset. On the second day, take the tram to Belém for the Jerónimos Monastery, the "
            "tower and the famous custard tarts. On the third day, take a train to Sintra to see "
            "the palaces in the hills.")},
        {"role": "user", "content": (
            "That sounds great, but I walk slowly because of a knee injury and steep streets are "
            "hard for me. Can you change the plan so that I avoid the steepest climbs, tell me "
            "which trams or lifts to use, and suggest where to rest with a coffee along the way?")}])),
    ("chat_email", chatml([{"role": "user", "content": (
        "Please help me write a polite but firm email to my landlord. The heating in my flat has "
        "been broken for eleven days. I reported it by phone on the first day and by email on the "
        "fourth day, and each time I was told that a technician would come within forty-eight "
        "hours, but nobody has come. The temperature inside is now around fourteen degrees in the "
        "mornings, and I have a small child at home. I would like the email to list the dates of "
        "my previous reports, ask for a repair date in writing by the end of this week, and "
        "mention that I will contact the local housing office if the problem is not solved. I do "
        "not want it to sound aggressive, because otherwise our relationship has been good. Keep "
        "it under two hundred words, please, and suggest a subject line that makes clear it is "
        "urgent without sounding like a threat.")}])),
    ("prose_lighthouse", (
        "The lighthouse keeper had lived on the island for thirty-one years, long enough to know "
        "every mood of the sea by the colour of the morning. On calm days the water lay flat and "
        "silver, and the gulls sat on it like scattered paper. On the days before a storm it "
        "turned the green of old bottles, and the wind came in short, nervous breaths that rattled "
        "the shutters of the cottage. He kept a logbook in which he wrote down the weather, the "
        "ships that passed, and sometimes a line or two about his own small affairs: a loaf of "
        "bread that had failed to rise, a letter from his sister on the mainland, the first "
        "swallow of spring. When the supply boat stopped coming in winter, the logbook was the "
        "only voice he heard besides his own. One evening in November, as the lamp began its slow "
        "turning above him, he saw a light where no light should be, low on the water to the "
        "north, blinking in a pattern he had not seen since he was a young man. He put down his "
        "pen, took the old brass telescope from its hook by the door, and climbed the stairs")),
    ("prose_history", (
        "The printing press did not change Europe overnight. When Johannes Gutenberg began printing "
        "with movable metal type in Mainz around 1450, books were still expensive, and most people "
        "could not read. What the press changed first was the economics of copying. A scribe might "
        "need months to copy a single Bible by hand, and every copy introduced new errors. A "
        "printing shop could produce hundreds of identical copies in the same time, and once the "
        "type was set, each additional copy cost little more than the paper and the ink. Within "
        "fifty years, presses were operating in more than two hundred cities, and millions of "
        "books had been printed. Scholars could now compare the same text across cities and "
        "argue about the same page numbers. Pamphlets spread religious and political arguments "
        "faster than authorities could answer them, which is one reason historians link the press "
        "to the Reformation. Yet the deeper effects took centuries: standardized spelling, the "
        "growth of vernacular literature, scientific journals, and eventually the idea that "
        "knowledge should be public and open to correction")),
    ("code_cpp", (
        "#include <algorithm>\n#include <cstdint>\n#include <string>\n#include <unordered_map>\n"
        "#include <vector>\n\n// A least-recently-used cache with a fixed capacity.\n"
        "template <typename Key, typename Value>\nclass LruCache {\n public:\n"
        "  explicit LruCache(size_t capacity) : capacity_(capacity) {}\n\n"
        "  // Returns a pointer to the cached value, or nullptr when the key is absent.\n"
        "  const Value* get(const Key& key) {\n    auto it = index_.find(key);\n"
        "    if (it == index_.end()) return nullptr;\n    touch(it->second);\n"
        "    return &entries_[it->second].value;\n  }\n\n"
        "  void put(const Key& key, Value value) {\n    auto it = index_.find(key);\n"
        "    if (it != index_.end()) {\n      entries_[it->second].value = std::move(value);\n"
        "      touch(it->second);\n      return;\n    }\n"
        "    if (entries_.size() == capacity_) evict_oldest();\n"
        "    entries_.push_back({key, std::move(value), ++clock_});\n"
        "    index_[key] = entries_.size() - 1;\n  }\n\n private:\n  struct Entry {\n"
        "    Key key;\n    Value value;\n    uint64_t last_used;\n  };\n\n"
        "  void touch(size_t i) { entries_[i].last_used = ++clock_; }\n\n"
        "  void evict_oldest() {\n")),
    ("code_python", (
        "import csv\nimport statistics\nfrom collections import defaultdict\nfrom pathlib import Path\n\n\n"
        "def load_measurements(path):\n    \"\"\"Reads a CSV of station,date,temperature rows and groups the "
        "temperatures by station.\"\"\"\n    by_station = defaultdict(list)\n"
        "    with Path(path).open(newline=\"\") as f:\n        for row in csv.DictReader(f):\n"
        "            try:\n                value = float(row[\"temperature\"])\n"
        "            except ValueError:\n                continue  # missing or malformed reading\n"
        "            by_station[row[\"station\"]].append(value)\n    return by_station\n\n\n"
        "def summarize(by_station):\n    \"\"\"Returns, per station, the count, mean, median and "
        "standard deviation of its readings.\"\"\"\n    summary = {}\n"
        "    for station, values in sorted(by_station.items()):\n        if len(values) < 2:\n"
        "            continue\n        summary[station] = {\n            \"count\": len(values),\n"
        "            \"mean\": statistics.fmean(values),\n"
        "            \"median\": statistics.median(values),\n"
        "            \"stdev\": statistics.stdev(values),\n        }\n    return summary\n\n\n"
        "def print_report(summary):\n    width = max(len(name) for name in summary)\n"
        "    for station, stats in summary.items():\n")),
]


def unpermute(w, n_head):
    """Inverse of convert_hf_to_gguf.py's LlamaModel.permute: interleaved RoPE pairs -> halves."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_reference_model(path):
    reader = gguf.GGUFReader(path)

    def field(name):
        return reader.fields[name].contents()

    n_head, n_kv = field("llama.attention.head_count"), field("llama.attention.head_count_kv")
    config = LlamaConfig(
        vocab_size=field("llama.vocab_size"), hidden_size=field("llama.embedding_length"),
        intermediate_size=field("llama.feed_forward_length"), num_hidden_layers=field("llama.block_count"),
        num_attention_heads=n_head, num_key_value_heads=n_kv,
        max_position_embeddings=field("llama.context_length"), rope_theta=field("llama.rope.freq_base"),
        rms_norm_eps=field("llama.attention.layer_norm_rms_epsilon"), tie_word_embeddings=True,
        torch_dtype="float32")
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    per_layer = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
    state = {}
    for t in reader.tensors:
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape)])
        if t.name.startswith("blk."):
            _, layer, kind, _ = t.name.split(".")
            if kind == "attn_q":
                w = unpermute(w, n_head)
            elif kind == "attn_k":
                w = unpermute(w, n_kv)
            state[f"model.layers.{layer}.{per_layer[kind]}.weight"] = torch.from_numpy(w.copy())
        else:
            state[names[t.name]] = torch.from_numpy(w.copy())
    if "output.weight" in {t.name for t in reader.tensors}:
        raise SystemExit(f"{path}: expected a tied output projection")
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model


def round5(values):
    return [round(float(v), 5) for v in values]


@torch.no_grad()
def reference_case(model, name, ids):
    logits = model(torch.tensor([ids])).logits[0].float()
    top = torch.topk(logits, TOP_K, dim=-1)
    greedy, past, step_ids = [], None, ids
    for _ in range(GREEDY_TOKENS):
        out = model(torch.tensor([step_ids]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        next_id = int(torch.argmax(out.logits[0, -1]))
        greedy.append(next_id)
        step_ids = [next_id]
    return {
        "name": name,
        "ids": ids,
        "top_ids": top.indices.tolist(),
        "top_logits": [round5(row) for row in top.values.tolist()],
        "fixed_logits": [round5(row) for row in logits[:, FIXED_IDS].tolist()],
        "greedy": greedy,
    }


def main():
    torch.set_num_threads(1)
    path = subprocess.run([str(ROOT / "scripts" / "fetch_models.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    tokenizer = reference_tokenizer(*gguf_vocabulary(path))
    prompts = [(name, tokenizer.encode(text, add_special_tokens=False).ids) for name, text in PROMPTS]
    for name, ids in prompts:
        if len(ids) < MIN_PROMPT_TOKENS:
            raise SystemExit(f"prompt {name}: {len(ids)} tokens, fewer than {MIN_PROMPT_TOKENS}")
    model = load_reference_model(path)
    cases = []
    for name, ids in prompts:
        cases.append(reference_case(model, name, ids))
        print(f"{name}: {len(ids)} tokens; greedy: {tokenizer.decode(cases[-1]['greedy'])!r}", flush=True)
    out = {
        "source": f"tests/reference/make_smollm2_fixtures.py (transformers {transformers.__version__}, "
                  f"torch {torch.__version__}, float32, {Path(path).name} dequantized by gguf)",
        "fixed_ids": FIXED_IDS,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
