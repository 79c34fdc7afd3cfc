#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/seed-*.

Small, valid inputs that reach deep into each parser: a tiny Llama GGUF (hyper-parameters,
SentencePiece vocabulary, F32/F16/BF16 tensors) and metadata of every type, quantized GGUF files
(star-mkmodel's, shrunk to one narrow layer, and one tensor of every block type), safetensors files,
config.json variants, tokenizer texts from the fixtures, gRPC requests encoded by protoc, and
OpenAI request bodies.
Crash regressions (crash-*) beside the seeds are never touched. Deterministic.
Run: python3 scripts/fuzz/make_seeds.py [path to star-mkmodel, default build/star-mkmodel]
"""
import json
import pathlib
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def write_seeds(target, seeds):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        (folder / f"seed-{name}").write_bytes(data)


# --- GGUF -------------------------------------------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
          U64: "<Q", I64: "<q", F64: "<d"}


def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind, value):
    if kind == STR:
        return gguf_string(value)
    if kind == ARR:
        element, items = value
        out = struct.pack("<IQ", element, len(items))
        return out + b"".join(gguf_value(element, v) for v in items)
    return struct.pack(SCALAR[kind], value)


def gguf_file(metadata, tensors, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, ne (innermost first), ggml type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset = 0
    placed = []
    for name, ne, ggml_type, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", ggml_type, offset)
        placed.append((offset, data))
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    data_start = len(out)
    for at, data in placed:
        out += b"\0" * (data_start + at - len(out)) + data
    return out


def f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def tensor_bytes(count, ggml_type, seed):
    values = [((i * 37 + seed * 11) % 17 - 8) / 16.0 for i in range(count)]
    if ggml_type == 0:
        return f32(values)
    if ggml_type == 1:
        return struct.pack(f"<{count}e", *values)
    return b"".join(struct.pack("<f", v)[2:] for v in values)  # BF16: the high half of F32


def tiny_llama_gguf(weight_type, tied):
    dim, hidden, layers, heads, kv_heads, vocab = 8, 16, 1, 2, 1, 12
    head_dim = dim // heads
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581", "\u2581a", "b", "c", "\u2581the", "he", "t", "<|eot|>"]
    types = [2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 3]
    metadata = [
        ("general.architecture", STR, "llama"),
        ("general.alignment", U32, 32),
        ("llama.embedding_length", U32, dim),
        ("llama.feed_forward_length", U32, hidden),
        ("llama.block_count", U32, layers),
        ("llama.attention.head_count", U32, heads),
        ("llama.attention.head_count_kv", U32, kv_heads),
        ("llama.context_length", U32, 64),
        ("llama.rope.dimension_count", U32, head_dim),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.freq_base", F32, 10000.0),
        ("tokenizer.ggml.model", STR, "llama"),
        ("tokenizer.ggml.tokens", ARR, (STR, pieces)),
        ("tokenizer.ggml.scores", ARR, (F32, [-float(i) for i in range(vocab)])),
        ("tokenizer.ggml.token_type", ARR, (I32, types)),
        ("tokenizer.ggml.bos_token_id", U32, 1),
        ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.ggml.add_space_prefix", BOOL, True),
    ]
    shapes = [("token_embd.weight", [dim, vocab]), ("output_norm.weight", [dim])]
    if not tied:
        shapes.append(("output.weight", [dim, vocab]))
    for n in range(layers):
        shapes += [(f"blk.{n}.attn_norm.weight", [dim]), (f"blk.{n}.ffn_norm.weight", [dim]),
                   (f"blk.{n}.attn_q.weight", [dim, heads * head_dim]),
                   (f"blk.{n}.attn_k.weight", [dim, kv_heads * head_dim]),
                   (f"blk.{n}.attn_v.weight", [dim, kv_heads * head_dim]),
                   (f"blk.{n}.attn_output.weight", [heads * head_dim, dim]),
                   (f"blk.{n}.ffn_gate.weight", [dim, hidden]), (f"blk.{n}.ffn_up.weight", [dim, hidden]),
                   (f"blk.{n}.ffn_down.weight", [hidden, dim])]
    tensors = []
    for i, (name, ne) in enumerate(shapes):
        count = 1
        for d in ne:
            count *= d
        kind = 0 if len(ne) == 1 else weight_type
        tensors.append((name, ne, kind, tensor_bytes(count, kind, i)))
    return gguf_file(metadata, tensors)


def gguf_seeds():
    every_type = [
        ("u8", U8, 200), ("i8", I8, -5), ("u16", U16, 60000), ("i16", I16, -300), ("u32", U32, 4000000000),
        ("i32", I32, -7), ("f32", F32, 0.5), ("bool", BOOL, True), ("str", STR, "text \u00e9"),
        ("u64", U64, 2**63 + 1), ("i64", I64, -2**40), ("f64", F64, 1e300),
        ("arr.u8", ARR, (U8, [1, 2, 3])), ("arr.i64", ARR, (I64, [-1, 2**62])), ("arr.f64", ARR, (F64, [0.25])),
        ("arr.bool", ARR, (BOOL, [True, False])), ("arr.str", ARR, (STR, ["a", "", "bc"])),
        ("arr.arr", ARR, (ARR, [(U32, [1, 2]), (STR, ["x"])])),
    ]
    metadata_only = gguf_file(every_type, [("t", [2, 3], 0, f32([1, 2, 3, 4, 5, 6])), ("empty", [0], 0, b"")],
                              alignment=32)
    return {
        "llama-f32": tiny_llama_gguf(0, tied=False),
        "llama-f16-tied": tiny_llama_gguf(1, tied=True),
        "llama-bf16": tiny_llama_gguf(30, tied=False),
        "metadata-every-type": metadata_only,
        "header-only": gguf_file([], []),
    }


def every_block_type_gguf():
    """Two rows of 256 of each block type, of deterministic bytes whose half scales are finite."""
    block_bytes = {2: 18, 3: 20, 6: 22, 7: 24, 8: 34, 12: 144, 13: 176, 14: 210}
    scale_offsets = {2: [0], 3: [0, 2], 6: [0], 7: [0, 2], 8: [0], 12: [0, 2], 13: [0, 2], 14: [208]}
    tensors = []
    for ggml_type, size in block_bytes.items():
        blocks_per_row = 256 // (256 if ggml_type >= 12 else 32)
        data = bytearray((i * 73 + ggml_type * 29) % 256 for i in range(2 * blocks_per_row * size))
        for block in range(2 * blocks_per_row):
            for at in scale_offsets[ggml_type]:
                struct.pack_into("<e", data, block * size + at, 0.01 * (block + 1) * (-1) ** at)
        tensors.append((f"w.{ggml_type}", [256, 2], ggml_type, bytes(data)))
    return gguf_file([("general.architecture", STR, "llama")], tensors)


def gguf_quantized_seeds(mkmodel):
    seeds = {"every-block-type": every_block_type_gguf()}
    shrink = ["--layers", "1", "--dim", "32", "--hidden", "32", "--heads", "2", "--kv-heads", "1",
              "--max-positions", "64", "--rope-scaling", "none"]
    for dtype in ("q4_k_m", "q5_1"):
        out = CORPUS / f"mkmodel-{dtype}.tmp"
        subprocess.run([str(mkmodel), "--format", "gguf", "--dtype", dtype, "--out", str(out)] + shrink,
                       check=True, stdout=subprocess.DEVNULL)
        seeds[f"mkmodel-{dtype}"] = out.read_bytes()
        out.unlink()
    return seeds


# --- safetensors ------------------------------------------------------------------------------
def safetensors_file(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    two = {"__metadata__": {"format": "pt"},
           "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
           "b": {"dtype": "F16", "shape": [3], "data_offsets": [16, 22]},
           "c": {"dtype": "BF16", "shape": [1, 1, 1], "data_offsets": [22, 24]},
           "scalar": {"dtype": "F32", "shape": [], "data_offsets": [24, 28]},
           "empty": {"dtype": "F32", "shape": [0, 4], "data_offsets": [28, 28]}}
    return {
        "mixed": safetensors_file(two, bytes(range(28))),
        "empty-header": safetensors_file({}, b""),
        "one": safetensors_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, f32([1.5])),
    }


# --- config.json ------------------------------------------------------------------------------
def hf_config_seeds():
    base = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
            "intermediate_size": 172, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 661, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    llama31 = dict(base, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 512},
                   eos_token_id=[2, 3], head_dim=16)
    legacy = dict(base, rope_scaling={"type": "llama3", "factor": 2.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 2.0, "original_max_position_embeddings": 1024},
                  eos_token_id=None)
    minimal = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
               "num_attention_heads": 2, "vocab_size": 10}
    generation = {"bos_token_id": 1, "eos_token_id": [2, 5], "do_sample": True}
    dump = lambda v: json.dumps(v, indent=2).encode()
    return {
        "llama.json": dump(base),
        "llama31-rope-scaling.json": dump(llama31),
        "legacy-rope-type.json": dump(legacy),
        "minimal.json": dump(minimal),
        "with-generation-config.json": dump(base) + b"\0" + dump(generation),
        "generation-eos-int.json": dump(minimal) + b"\0" + dump({"eos_token_id": 3}),
    }


# --- tokenizers -------------------------------------------------------------------------------
def tokenizer_seeds(tokenizers):
    """The first byte: tokenizer index (bits 0-2), add_bos (3), parse_special (4), decode ids (5)."""
    cases = json.loads((ROOT / "tests" / "fixtures" / "tokenizer" / "cases.json").read_text())
    texts = [t for t in cases["texts"] if t][:: max(1, len(cases["texts"]) // 24)]
    texts += ["<|begin_of_text|>Hi<|eot_id|>", "<s> a </s>", "<|user|>h\u00e9llo", "\u2581x", "a\xff"]
    seeds = {}
    for i, text in enumerate(texts):
        tokenizer = i % tokenizers
        flags = [0, 0x08, 0x10, 0x18][i % 4]
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        seeds[f"text-{i:02d}"] = bytes([tokenizer | flags]) + data
    for tokenizer in range(tokenizers):
        ids = struct.pack("<8H", 1, 100, 200, 3, 4, 65535, 0, 300)
        seeds[f"ids-{tokenizer}"] = bytes([tokenizer | 0x20]) + ids
    return seeds


# --- gRPC requests ----------------------------------------------------------------------------
def protoc_encode(message, text):
    proto = ROOT / "proto"
    return subprocess.run(["protoc", f"--proto_path={proto}", f"--encode=star.v1.{message}", "star/v1/star.proto"],
                          input=text.encode(), capture_output=True, check=True).stdout


def grpc_request_seeds():
    generate = {  # first byte 0 | (ranks - 1) << 1
        "text": 'text { context: "Once upon a time there was a fox." query: "Who was there?" } max_tokens: 8',
        "text-no-context": 'text { query: "Hello" } sampling { temperature: 0.7 top_k: 5 top_p: 0.9 seed: 3 }',
        "tokens": 'tokens { context_ids: [1, 2, 3, 4, 5, 6, 7, 8] query_ids: [9, 10] } stop: "x" stop_token_ids: [4]',
        "session-text": 'session { context_id: "ctx-fuzz" query_text: "and then?" } max_tokens: 16',
        "session-ids": 'session { context_id: "ctx-fuzz" query_ids { ids: [5, 6] } } ignore_eos: true',
        "attention-pulsar": 'text { context: "a b c d e f g h i j k l m n o p" query: "q" } '
                            'attention { algorithm: "pulsar" block_size: 4 sink_tokens: 2 chunk_tokens: 2 '
                            'summary_fraction: 0.5 scoring: "bm25" position_mode: "sparse" }',
        "attention-streaming": 'tokens { context_ids: [1, 2, 3] query_ids: [4] } '
                               'attention { algorithm: "streaming" streaming_sink: 1 streaming_window: 2 }',
        "attention-ring": 'tokens { context_ids: [1, 2, 3, 4, 5] query_ids: [4] } attention { algorithm: "ring" }',
    }
    create = {
        "text": 'text: "A long context to keep." reserve_tokens: 64',
        "ids": 'ids { ids: [1, 2, 3, 4, 5, 6, 7] } attention { algorithm: "star" block_size: 2 anchor_size: 1 }',
        "ids-dense": 'ids { ids: [1, 2] } attention { algorithm: "dense" keep_prefix_kv: true }',
    }
    seeds = {}
    for i, (name, text) in enumerate(generate.items()):
        seeds[f"generate-{name}"] = bytes([(i % 4) << 1]) + protoc_encode("GenerateRequest", text)
    for i, (name, text) in enumerate(create.items()):
        seeds[f"create-context-{name}"] = bytes([1 | (i % 4) << 1]) + protoc_encode("CreateContextRequest", text)
    return seeds


def http_request_seeds():
    """OpenAI request bodies; the first byte picks the endpoint (0: chat, 1: completions)."""
    chat = [
        {"model": "tiny", "messages": [{"role": "user", "content": "Hello"}]},
        {"model": "tiny", "messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "Hi"},
                                       {"role": "assistant", "content": "Hello!"},
                                       {"role": "user", "content": "Who are you?"}],
         "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["\n", "END"],
         "stream": True, "stream_options": {"include_usage": True}},
        {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "n": 2},
        {"model": "tiny", "messages": [{"role": "user", "content": "q"}],
         "star": {"context_id": "ctx-1", "attention": {"algorithm": "pulsar", "block_size": 64}},
         "top_k": 5, "stop_token_ids": [1, 2], "ignore_eos": True, "max_completion_tokens": 8},
        {"model": "tiny", "messages": []},
    ]
    completions = [
        {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 8},
        {"model": "tiny", "prompt": "Q?", "star": {"context": "A long document."}, "stream": True},
        {"model": "tiny", "prompt": ["a", "b"], "min_tokens": 1},
    ]
    seeds = {}
    for i, body in enumerate(chat):
        seeds[f"chat-{i:02d}"] = b"\x00" + json.dumps(body).encode()
    for i, body in enumerate(completions):
        seeds[f"completion-{i:02d}"] = b"\x01" + json.dumps(body).encode()
    return seeds


def main():
    mkmodel = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "star-mkmodel")
    if not mkmodel.is_file():
        print(f"star-mkmodel not found at {mkmodel}: build it or pass its path", file=sys.stderr)
        return 2
    write_seeds("gguf_reader", gguf_seeds())
    write_seeds("gguf_quantized", gguf_quantized_seeds(mkmodel))
    write_seeds("safetensors_reader", safetensors_seeds())
    write_seeds("hf_config", hf_config_seeds())
    write_seeds("byte_level_bpe", tokenizer_seeds(3))
    write_seeds("sentencepiece", tokenizer_seeds(3))
    write_seeds("grpc_request", grpc_request_seeds())
    write_seeds("http_request", http_request_seeds())
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    print(f"corpus: {total} bytes under {CORPUS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
