#!/usr/bin/python3
"""Checks that a star-mkmodel directory loads cleanly in HF's libraries (run by hand).

    build/src/star-mkmodel --out /tmp/tiny --preset tiny --seed 1
    /usr/bin/python3 tests/reference/check_mkmodel_hf.py /tmp/tiny

Loads tokenizer.json with `tokenizers`, the directory with AutoTokenizer and LlamaForCausalLM,
fails on missing or unexpected weights (or any warning that mentions them), checks that text
round-trips through the tokenizer and that the special ids agree with config.json, and runs one
forward pass. Needs torch, transformers and tokenizers (the system python has them).
"""
import io
import json
import logging
import math
import os
import sys

import torch
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer, LlamaForCausalLM


def main(model_dir):
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    transformers.logging.get_logger().addHandler(handler)
    transformers.logging.set_verbosity_warning()

    raw = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    text = "Once upon a time, the café had 131072 tokens!\n\tdef f(x):\n    return x  # done"
    ids = raw.encode(text, add_special_tokens=False).ids
    assert raw.decode(ids) == text, "tokenizer.json does not round-trip text"

    config = json.load(open(os.path.join(model_dir, "config.json")))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert len(tokenizer) <= config["vocab_size"], "tokenizer larger than the embedding"
    assert tokenizer.bos_token_id == config["bos_token_id"]
    assert tokenizer.convert_tokens_to_ids("<|eot_id|>") in config["eos_token_id"]
    encoded = tokenizer(text).input_ids
    assert encoded[0] == config["bos_token_id"] and encoded[1:] == ids, "BOS post-processor"

    model, info = LlamaForCausalLM.from_pretrained(model_dir, output_loading_info=True)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info[key], f"{key}: {info[key]}"
    warnings = log.getvalue()
    assert "newly initialized" not in warnings and "not used" not in warnings, warnings
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert tied == config["tie_word_embeddings"]

    with torch.no_grad():
        logits = model(torch.tensor([encoded]), use_cache=False).logits[0, -1].float()
    assert torch.isfinite(logits).all()
    params = sum(p.numel() for p in model.parameters())
    print(f"{model_dir}: OK, {params} parameters, vocab {config['vocab_size']}, tokenizer {len(tokenizer)}, "
          f"last-token logits std {logits.std().item():.3f}")
    if warnings.strip():
        print("warnings:\n" + warnings)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
