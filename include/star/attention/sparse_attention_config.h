// SparseAttentionConfig: TensorRT-LLM's sparse attention, orthogonal to the Phase 1 algorithm. It
// lives in AttentionConfig::sparse and is read from the `sparse_attention` object of an attention
// config (JSON, flags, gRPC, the shim's `star.attention`), with TensorRT-LLM's key names:
//
//   {"algorithm": "skip_softmax", "threshold_scale_factor": 1000}
//   {"algorithm": "skip_softmax", "threshold_scale_factor": {"prefill": 1000, "decode": 500}}
//   {"algorithm": "rocket", "prompt_budget": 2048, "window_size": 32, "kernel_size": 63,
//    "topk": 64, "topr": 128, "page_size": 4}
//   {"algorithm": "rocket", "token_budget": 256}       (the RocketKV paper's budget, below)
#pragma once

#include <cstdint>
#include <string>

namespace star {

// Skip Softmax (BLASST): a KV tile is skipped when every query row of its vote group has
// m_tile - m_run < ln(lambda), lambda = S / L for the call's KV length L, and only when 0 < lambda < 1.
// S = 0 disables the phase. There is no default in TensorRT-LLM, hence 0.
struct SkipSoftmaxConfig {
  double prefill_scale_factor = 0.0;  // S for Phase 1 and the query's own prefill
  double decode_scale_factor = 0.0;   // S for each generated token

  bool operator==(const SkipSoftmaxConfig&) const = default;
};

// RocketKV: stage 1 compacts each KV head's cache to `prompt_budget` tokens after the prompt is
// encoded; stage 2 picks `topk` pages of `page_size` tokens per KV head at every decode step.
// Defaults are TensorRT-LLM's RocketSparseAttentionConfig.
//
// `token_budget` is the budget as the RocketKV paper counts it (its "256-token budget"): when > 0,
// each request derives prompt_budget, topk, topr and page_size from it, its prompt length and its
// max_tokens the way RocketKV's reference code does (attention/rocket/token_budget.h), so those
// four keys are not given with it. 0: they are read as given.
struct RocketConfig {
  int64_t prompt_budget = 2048;
  int64_t window_size = 32;
  int64_t kernel_size = 63;
  int64_t topk = 64;    // pages
  int64_t topr = 128;   // query channels; >= head_dim disables the channel filter
  int64_t page_size = 4;  // tokens per KT page, a power of two
  int64_t token_budget = 0;

  bool operator==(const RocketConfig&) const = default;
};

struct SparseAttentionConfig {
  std::string algorithm = "none";  // none | skip_softmax | rocket
  SkipSoftmaxConfig skip_softmax;  // read when algorithm == "skip_softmax"
  RocketConfig rocket;             // read when algorithm == "rocket"

  bool operator==(const SparseAttentionConfig&) const = default;
};

}  // namespace star
