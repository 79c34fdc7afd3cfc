"""LlamaForCausalLM's forward pass written out for fast training on a CPU: the same parameters
(names included), RMSNorm, half-vector RoPE, SwiGLU and GQA, without the library's per-call
overhead. check_tiny_llama.py checks it against transformers' own LlamaForCausalLM."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
  def __init__(self, dim, eps):
    super().__init__()
    self.weight = nn.Parameter(torch.ones(dim))
    self.eps = eps

  def forward(self, x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotate_half(x):
  a, b = x.chunk(2, dim=-1)
  return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
  CHUNK = 128

  def __init__(self, c):
    super().__init__()
    self.h, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, c.hidden_size // c.num_attention_heads
    self.q_proj = nn.Linear(c.hidden_size, self.h * self.d, bias=False)
    self.k_proj = nn.Linear(c.hidden_size, self.kv * self.d, bias=False)
    self.v_proj = nn.Linear(c.hidden_size, self.kv * self.d, bias=False)
    self.o_proj = nn.Linear(self.h * self.d, c.hidden_size, bias=False)

  def forward(self, x, cos, sin, mask):
    # x: (B, T, C); q: (B, H, T, D); k, v: (B, KV, T, D) repeated to H heads (GQA)
    b, t, _ = x.shape
    q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
    k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
    v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    # GQA without copying K and V: query heads grouped under the KV head they share.
    rep = self.h // self.kv
    q = q.reshape(b, self.kv, rep, t, self.d)
    k, v = k[:, :, None], v[:, :, None]
    out = torch.empty_like(q)
    # Causal attention chunk by chunk of queries, each against only the keys up to its end: the
    # masked upper triangle is never computed (about half the work at long lengths).
    for lo in range(0, t, self.CHUNK):
      hi = min(t, lo + self.CHUNK)
      scores = (q[:, :, :, lo:hi] @ k[:, :, :, :hi].transpose(-1, -2)) * (self.d ** -0.5) + mask[lo:hi, :hi]
      probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
      out[:, :, :, lo:hi] = probs @ v[:, :, :, :hi]
    out = out.view(b, self.h, t, self.d)
    return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
  def __init__(self, c):
    super().__init__()
    self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
    self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
    self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

  def forward(self, x):
    return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
  def __init__(self, c):
    super().__init__()
    self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
    self.self_attn = Attention(c)
    self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
    self.mlp = MLP(c)

  def forward(self, x, cos, sin, mask):
    x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
    return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
  def __init__(self, c):
    super().__init__()
    self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
    self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
    self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class TinyLlama(nn.Module):
  """state_dict() keys are LlamaForCausalLM's (model.layers.N.self_attn.q_proj.weight, ...)."""

  def __init__(self, c):
    super().__init__()
    self.config = c
    self.model = Body(c)
    self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
    if c.tie_word_embeddings:
      self.lm_head.weight = self.model.embed_tokens.weight
    for m in self.modules():
      if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=0.02)
    d = c.hidden_size // c.num_attention_heads
    self.register_buffer("inv_freq", 1.0 / (c.rope_theta ** (torch.arange(0, d, 2).float() / d)), persistent=False)

  def forward(self, input_ids):
    # input_ids: (B, T) -> logits (B, T, V)
    t = input_ids.size(1)
    pos = torch.arange(t, dtype=torch.float)
    freqs = torch.outer(pos, self.inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((t, t), float("-inf")).triu(1)
    x = self.model.embed_tokens(input_ids)
    for layer in self.model.layers:
      x = layer(x, cos, sin, mask)
    return self.lm_head(self.model.norm(x))
