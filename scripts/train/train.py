#!/usr/bin/python3
"""Trains a small Llama (LlamaForCausalLM: RMSNorm, half-vector RoPE, SwiGLU, GQA) from scratch on
synthetic long-context retrieval data and writes it in HF layout for the C++ engine.

  /usr/bin/python3 scripts/train/train.py --out /tmp/needle-llama --steps 3000

Curriculum: a lone needle in short filler plus a copying drill first (copying must form before
anything else can), then longer haystacks with distractor needles, then up to --max-len.
Data, initialisation and tokenizer are seeded (--seed).
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import retrieval_data as data  # noqa: E402
from tiny_llama import TinyLlama  # noqa: E402

BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"


def train_tokenizer(path, vocab_size, seed):
  """Byte-level BPE (what the C++ loader reads) with every digit its own token, so values are
  copied digit by digit."""
  from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
  rng = random.Random(seed)
  texts = []
  for _ in range(3000):
    s = data.sample(rng, lambda t: len(t.split()), rng.randint(50, 300), rng.randint(0, 6),
                    rng.choice(["single", "multivalue"]))
    texts.append(s.context + s.query + s.answer)
  tok = Tokenizer(models.BPE())
  tok.pre_tokenizer = pre_tokenizers.Sequence([
      pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
  tok.decoder = decoders.ByteLevel()
  trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[BOS, EOS],
                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
  tok.train_from_iterator(texts, trainer)
  tok.save(path)
  return tok


class TokenCounter:
  """Token count of a text as the sum over its pre-tokens (byte-level BPE never merges across
  them), cached per pre-token: fast enough to size haystacks sentence by sentence."""
  PIECE = re.compile(r"\d| ?[A-Za-z]+| ?[^\sA-Za-z\d]+|\s+")

  def __init__(self, tok):
    self.tok, self.cache = tok, {}

  def __call__(self, text):
    n = 0
    for piece in self.PIECE.findall(text):
      c = self.cache.get(piece)
      if c is None:
        c = self.cache[piece] = len(self.tok.encode(piece).ids)
      n += c
    return n


def encode_sample(tok, s, bos, eos, extra_queries=0):
  """ids and a mask of the answer tokens; context, query and answer are tokenized separately, as
  star-run does (context with BOS, then the query, then the generated answer and EOS). Up to
  extra_queries more question-answer pairs follow, each closed by EOS."""
  ids = [bos] + tok.encode(s.context).ids
  mask = [0] * len(ids)
  for query, answer in [(s.query, s.answer)] + s.more[:extra_queries]:
    q = tok.encode(query).ids
    a = tok.encode(answer).ids + [eos]
    ids += q + a
    mask += [0] * len(q) + [1] * len(a)
  return ids, mask


def stage(progress, max_len, rng):
  """(length budget, distractor needles, haystack kinds) for a sample at this point of the
  curriculum. A lone needle in short filler first: copying (an induction head) forms only when the
  answer can be found without matching keys. Then longer haystacks and a few distractor needles
  (key matching), then up to max_len with a quarter of the samples shorter so earlier skills stay."""
  if progress < 0.25:
    return rng.randint(48, 256), (0 if rng.random() < 0.8 else rng.randint(1, 2)), ("noise", "essay")
  if progress < 0.45:
    return rng.randint(128, max(160, max_len // 2)), rng.randint(0, 3), ("noise", "essay", "essay", "needles")
  if rng.random() < 0.25:
    return rng.randint(96, max(128, max_len // 2)), rng.randint(0, 4), ("noise", "essay", "essay", "needles")
  return rng.randint(max_len // 2, max_len - 40), rng.randint(0, 4), ("noise", "essay", "essay", "needles")


def make_batch(tok, counter, rng, progress, args, bos, eos):
  budget, distractors, haystacks = stage(progress, args.max_len, rng)
  rows = []
  total = 0
  while total < args.tokens_per_step:
    task = "multivalue" if rng.random() < args.multivalue_fraction else "single"
    if rng.random() < args.repeat_fraction * (1.0 if progress < 0.35 else 0.5):
      s = data.repeat_sample(rng, rng.randint(4, max(5, budget // 8)))
    else:
      s = data.sample(rng, counter, budget, distractors, task, haystacks)
    ids, mask = encode_sample(tok, s, bos, eos, args.extra_queries)
    ids, mask = ids[:args.max_len + 96], mask[:args.max_len + 96]
    rows.append((ids, mask))
    total += len(ids)
  width = max(len(r[0]) for r in rows)
  x = torch.zeros(len(rows), width, dtype=torch.long)
  w = torch.zeros(len(rows), width)
  a = torch.zeros(len(rows), width)
  for i, (ids, mask) in enumerate(rows):
    x[i, :len(ids)] = torch.tensor(ids)
    w[i, :len(ids)] = 1.0
    a[i, :len(ids)] = torch.tensor(mask, dtype=torch.float)
  return x, w, a


def loss_of(model, x, w, a, context_weight):
  """Mean answer-token loss plus context_weight times the mean loss on every other token, and the
  share of answer tokens the model predicts (argmax), which shows copying forming as it trains."""
  logits = model(x)[:, :-1].float()
  target = x[:, 1:]
  ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1), reduction="none").view_as(target)
  valid, ans = w[:, 1:], a[:, 1:]
  other = valid * (1 - ans)
  answer_loss = (ce * ans).sum() / ans.sum().clamp(min=1)
  context_loss = (ce * other).sum() / other.sum().clamp(min=1)
  answer_accuracy = ((logits.argmax(-1) == target).float() * ans).sum() / ans.sum().clamp(min=1)
  return answer_loss + context_weight * context_loss, answer_loss, answer_accuracy


@torch.no_grad()
def greedy_accuracy(model, tok, bos, eos, lengths, n, seed):
  """Exact match of the greedy answer on held-out samples (a different seed from training)."""
  model.eval()
  counter = TokenCounter(tok)
  out = {}
  for length in lengths:
    rng = random.Random(seed + length)
    hits = 0
    for _ in range(n):
      s = data.sample(rng, counter, length - 40, rng.randint(0, 4), "single")
      ids, mask = encode_sample(tok, s, bos, eos)
      start = mask.index(1)
      seq = ids[:start]
      for _ in range(len(ids) - start):
        with torch.autocast("cpu", dtype=torch.bfloat16):
          nxt = int(model(torch.tensor([seq]))[0, -1].argmax())
        seq.append(nxt)
        if nxt == eos:
          break
      hits += seq[start:] == ids[start:]
    out[length] = hits / n
  model.train()
  return out


def save_model(model, tok_path, out, args):
  from safetensors.torch import save_file
  os.makedirs(out, exist_ok=True)
  cfg = model.config.to_dict()
  keep = ["architectures", "hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
          "num_key_value_heads", "vocab_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
          "tie_word_embeddings", "bos_token_id", "eos_token_id", "hidden_act", "head_dim", "model_type"]
  cfg = {k: cfg[k] for k in keep if k in cfg}
  cfg["architectures"] = ["LlamaForCausalLM"]
  cfg["model_type"] = "llama"
  cfg["torch_dtype"] = "float32"
  with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(cfg, f, indent=2)
  state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()
           if not (args.tie and k == "lm_head.weight")}
  save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
  shutil.copy(tok_path, os.path.join(out, "tokenizer.json"))
  with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
    json.dump({"bos_token": BOS, "eos_token": EOS, "add_bos_token": True,
               "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": args.max_position}, f, indent=2)
  with open(os.path.join(out, "generation_config.json"), "w") as f:
    json.dump({"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"], "do_sample": False}, f,
              indent=2)


def write_card(out, model, args, history, tokens, seconds):
  """README.md beside the weights: what the model is, the command that made it, the data, and the
  held-out exact match at every checkpoint so far. Evaluations of the finished model (star-eval)
  are added to it by hand."""
  config = model.config
  params = sum(t.numel() for t in model.parameters())
  lengths = sorted({n for _, acc in history for n in acc})
  lines = [
      f"# {os.path.basename(os.path.abspath(out))}", "",
      "A small Llama (`LlamaForCausalLM`) trained from scratch by `scripts/train/train.py` on synthetic",
      "long-context retrieval text (`scripts/train/retrieval_data.py`): filler with",
      "\"The special magic <number|word|code> for <key> is <value>.\" needles and a question at the end.", "",
      "| | |", "|---|---|",
      f"| layers / hidden / heads / KV heads / MLP | {config.num_hidden_layers} / {config.hidden_size} / "
      f"{config.num_attention_heads} / {config.num_key_value_heads} / {config.intermediate_size} |",
      f"| parameters | {params:,} |",
      f"| vocabulary | {config.vocab_size:,} byte-level BPE, every digit its own token |",
      f"| trained up to | {args.max_len:,} tokens (`max_position_embeddings` {args.max_position:,}) |", "",
      "## Training", "", "```sh", "/usr/bin/python3 scripts/train/train.py " + " ".join(sys.argv[1:]), "```", "",
      f"{len(history) and history[-1][0]:,} steps, {tokens / 1e6:.1f}M tokens in {seconds / 60:.1f} minutes "
      f"({tokens / max(seconds, 1e-9):,.0f} tokens/s, {args.threads} threads, bf16 autocast), seed {args.seed}, "
      f"lr {args.lr:g} cosine to 10%, {args.tokens_per_step:,} tokens per step.", "",
      f"Curriculum (`stage()`): lone needles in 48-256 tokens for the first 25% of the steps, then "
      f"128-{max(160, args.max_len // 2)} tokens with 0-3 distractor needles to 45%, then "
      f"{args.max_len // 2}-{args.max_len - 40} tokens (a quarter of the samples shorter) with 0-4; a copying "
      f"drill in {100 * args.repeat_fraction:.0f}% of the samples early, half that later.", "",
      "Held-out single-needle exact match (10 samples per length, 0-4 distractor needles, every value and",
      "haystack kind):", "",
      "| step | " + " | ".join(f"{n:,} tokens" for n in lengths) + " |",
      "|---|" + "---:|" * len(lengths)]
  for step, acc in history:
    lines.append(f"| {step:,} | " + " | ".join(f"{100 * acc[n]:.0f}%" for n in lengths) + " |")
  with open(os.path.join(out, "README.md"), "w") as f:
    f.write("\n".join(lines) + "\n")


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--out", required=True)
  p.add_argument("--steps", type=int, default=3000)
  p.add_argument("--tokens-per-step", type=int, default=8192)
  p.add_argument("--max-len", type=int, default=1024)
  p.add_argument("--max-position", type=int, default=4096)
  p.add_argument("--hidden", type=int, default=128)
  p.add_argument("--layers", type=int, default=4)
  p.add_argument("--heads", type=int, default=4)
  p.add_argument("--kv-heads", type=int, default=2)
  p.add_argument("--intermediate", type=int, default=384)
  p.add_argument("--vocab", type=int, default=1024)
  p.add_argument("--lr", type=float, default=4e-3)
  p.add_argument("--warmup", type=int, default=100)
  p.add_argument("--context-weight", type=float, default=1.0)
  p.add_argument("--extra-queries", type=int, default=3)
  p.add_argument("--repeat-fraction", type=float, default=0.3)
  p.add_argument("--multivalue-fraction", type=float, default=0.15)
  p.add_argument("--tie", action=argparse.BooleanOptionalAction, default=True)
  p.add_argument("--seed", type=int, default=1234)
  p.add_argument("--eval-every", type=int, default=250)
  p.add_argument("--threads", type=int, default=2)
  args = p.parse_args()

  torch.set_num_threads(args.threads)
  torch.manual_seed(args.seed)
  rng = random.Random(args.seed)
  os.makedirs(args.out, exist_ok=True)
  work = args.out + ".work"
  os.makedirs(work, exist_ok=True)
  tok_path = os.path.join(work, "tokenizer.json")
  tok = train_tokenizer(tok_path, args.vocab, args.seed)
  bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)

  from transformers import LlamaConfig
  config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=args.hidden, intermediate_size=args.intermediate,
                       num_hidden_layers=args.layers, num_attention_heads=args.heads,
                       num_key_value_heads=args.kv_heads, max_position_embeddings=args.max_position,
                       rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=args.tie,
                       bos_token_id=bos, eos_token_id=eos)
  model = TinyLlama(config)
  print(f"parameters: {sum(t.numel() for t in model.parameters()):,}  vocab: {config.vocab_size}", flush=True)
  opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
  counter = TokenCounter(tok)
  start = time.time()
  tokens = 0
  history = []
  for step in range(1, args.steps + 1):
    progress = step / args.steps
    lr = args.lr * min(1.0, step / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
    for g in opt.param_groups:
      g["lr"] = lr
    x, w, a = make_batch(tok, counter, rng, progress, args, bos, eos)
    with torch.autocast("cpu", dtype=torch.bfloat16):
      loss, answer_loss, answer_accuracy = loss_of(model, x, w, a, args.context_weight)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    tokens += int(w.sum())
    if step % 25 == 0:
      el = time.time() - start
      print(f"step {step} len {x.size(1)} loss {loss.item():.3f} answer {answer_loss.item():.3f} "
            f"answer acc {answer_accuracy.item():.2f} "
            f"lr {lr:.2e} {tokens / el:.0f} tok/s {el / 60:.1f} min", flush=True)
    if step % args.eval_every == 0 or step == args.steps:
      save_model(model, tok_path, args.out, args)
      acc = greedy_accuracy(model, tok, bos, eos, [256, args.max_len], 10, seed=987654)
      history.append((step, acc))
      write_card(args.out, model, args, history, tokens, time.time() - start)
      print(f"step {step} checkpoint written; held-out single-needle exact match {acc}", flush=True)
  print(f"done in {(time.time() - start) / 60:.1f} min", flush=True)


if __name__ == "__main__":
  main()
