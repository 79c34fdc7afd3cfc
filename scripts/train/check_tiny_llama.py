#!/usr/bin/python3
"""Checks tiny_llama.TinyLlama against transformers' own LlamaForCausalLM: same parameter names,
same logits. Run after changing tiny_llama.py:

  /usr/bin/python3 scripts/train/check_tiny_llama.py

Uses a sequence longer than the attention chunk and not a multiple of it, GQA, and both tied and
untied output projections.
"""
import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_llama import Attention, TinyLlama  # noqa: E402


def check(tie):
  torch.manual_seed(0)
  config = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                       rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=tie)
  ours = TinyLlama(config)
  theirs = LlamaForCausalLM(config)
  missing, unexpected = theirs.load_state_dict(ours.state_dict(), strict=False)
  assert not unexpected, unexpected
  assert set(missing) <= {"lm_head.weight"} and (tie or not missing), missing
  theirs.eval()
  ids = torch.randint(0, config.vocab_size, (2, Attention.CHUNK * 2 + 37))
  with torch.no_grad():
    diff = (ours(ids) - theirs(ids).logits).abs().max().item()
  print(f"tie={tie}: max |logit difference| {diff:.2e}")
  assert diff < 1e-4, diff


if __name__ == "__main__":
  check(tie=True)
  check(tie=False)
  print("TinyLlama matches LlamaForCausalLM")
