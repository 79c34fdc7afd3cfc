// SparseAttentionConfig in and out: the `sparse_attention` object of an attention config, with
// TensorRT-LLM's keys. Only the chosen algorithm's keys are accepted; the other algorithm's keys are
// refused by name, so a typo or a half-edited config never passes silently.
//
//   {"algorithm": "none"}
//   {"algorithm": "skip_softmax", "threshold_scale_factor": 1000}
//   {"algorithm": "skip_softmax", "threshold_scale_factor": {"prefill": 1000, "decode": 500}}
//   {"algorithm": "rocket", "prompt_budget": 2048, "window_size": 32, "kernel_size": 63,
//    "topk": 64, "topr": 128, "page_size": 4}
//   {"algorithm": "rocket", "token_budget": 256, "window_size": 32, "kernel_size": 63}
//
// Error messages start with the field, sparse_attention.<field>, then the value and the allowed
// range, so a caller can put its own path in front (the shim: star.attention.).
#pragma once

#include <nlohmann/json.hpp>

#include "star/attention/sparse_attention_config.h"
#include "star/common/status.h"

namespace star {

// The allowed ranges: algorithm in {none, skip_softmax, rocket}; scale factors finite and >= 0;
// rocket: prompt_budget > window_size >= 1 (unless token_budget derives it), kernel_size odd >= 1,
// topk >= 1, topr >= 1, page_size a power of two, token_budget 0 or >= 16.
Status validate_sparse_attention_config(const SparseAttentionConfig& config);

// Parses and validates. A missing threshold_scale_factor (or a missing phase of it) is 0: that phase
// runs dense. Missing rocket keys keep TensorRT-LLM's defaults. With token_budget, the keys it
// derives (prompt_budget, topk, topr, page_size) are refused by name.
Result<SparseAttentionConfig> sparse_attention_config_from_json(const nlohmann::json& json);

// The algorithm and its own keys; threshold_scale_factor is one number when both phases agree;
// rocket with a token_budget gives it instead of the keys it derives.
// sparse_attention_config_from_json(sparse_attention_config_to_json(c)) == c whenever the sections
// of the algorithms not chosen hold their defaults (as every parsed config does).
nlohmann::json sparse_attention_config_to_json(const SparseAttentionConfig& config);

}  // namespace star
