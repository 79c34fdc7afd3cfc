// Phase 1 cost model, to check benchmarks and size clusters: for a model shape, a context of L tokens,
// B ranks and an AttentionConfig, the longest Phase 1 pass, its attention FLOPs and the memory per
// rank, counted the way the Pulsar paper counts them (Section 5.2, Table 4). Blocks follow the same
// rule as the plans (block_ranges.h), so uneven splits and explicit block sizes are costed exactly.
// Each algorithm's passes come from its entry in the algorithm registry (algorithm_registry.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/model/kv_dtype.h"
#include "star/model/llama_config.h"

namespace star {

// Activations are costed at 16 bits (the papers run bf16 / fp16); KV entries at the stored type,
// bf16 unless told (kv_bytes(kv_dtype, ...): f32 4 bytes, bf16 2, q8_0 34 per 32).
inline constexpr int64_t kCostBytesPerElement = 2;

// Model shapes by name: "llama-3.1-8b", "llama-3.1-70b".
Result<LlamaConfig> cost_model_preset(std::string_view name);
// The shape keys of a Hugging Face config.json: hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads (default: num_attention_heads), head_dim (default:
// hidden_size / num_attention_heads), vocab_size. Nothing else is read.
Result<LlamaConfig> read_cost_model_config(const std::filesystem::path& config_json);

// A causal pass of n tokens, per layer: 2·n²·(Hq + Hkv)·d (the paper's count).
double causal_attention_flops(const LlamaConfig& model, int64_t n);
// K and V of one token over all layers: 2 · layers · kv_bytes(kv_dtype, Hkv · d).
int64_t kv_bytes_per_token(const LlamaConfig& model, KvDType kv_dtype = KvDType::kBF16);
// Q, K, V and attention output of one token in one layer: (2·Hq + 2·Hkv) · d · kCostBytesPerElement.
// FlashAttention never materialises the n² scores, so a pass holds O(n) activations per layer.
int64_t attention_activation_bytes_per_token(const LlamaConfig& model);

struct Phase1Cost {
  std::string algorithm;
  int64_t context_tokens = 0;
  int n_ranks = 0;
  int64_t critical_path_tokens = 0;  // the longest single Phase 1 pass on any rank
  // Per layer, on the rank with the most attention work. A pass of n tokens costs
  // causal_attention_flops(n) (dense, star, no-anchor, pulsar: the longest pass); ring's rank costs
  // its segment's rows of the dense causal triangle, causal(end) − causal(begin); streaming costs
  // causal(S + W) plus (L − S − W) rows that each see S + W keys.
  double attention_flops_per_layer = 0.0;
  // Peak per layer during Phase 1: the longest pass's Q, K, V and output; ring also holds one
  // remote segment's K and V in flight. The MLP's intermediate is not counted (as in the paper).
  int64_t activation_bytes_per_rank = 0;
  // After Phase 1, on the rank with the largest shard: the shard's KV over all layers, plus the
  // sink and summary KV when pulsar keeps them (keep_prefix_kv). Streaming keeps the whole context;
  // its window bounds what is read, not what is stored.
  int64_t kv_bytes_per_rank = 0;
};

// Validates the inputs (L >= 1, ranks >= 1, config as validate_attention_config, which refuses an
// algorithm the registry does not hold, model shape > 0, kv_dtype storable at the model's head_dim).
// Pulsar summaries are costed at min(k · chunk_tokens, tokens eligible in the block): exact when the
// block is a multiple of chunk_tokens, an upper bound when a selected last chunk is partial.
Result<Phase1Cost> phase1_cost(const LlamaConfig& model, int64_t context_tokens, int n_ranks,
                               const AttentionConfig& config, KvDType kv_dtype = KvDType::kBF16);

}  // namespace star
