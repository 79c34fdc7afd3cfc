#include "star/attention/cost_model.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/attention/attention_config_io.h"
#include "star/attention/block_ranges.h"
#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

LlamaConfig model_shape(int64_t dim, int64_t hidden_dim, int64_t n_layers, int64_t n_heads, int64_t n_kv_heads,
                        int64_t head_dim, int64_t vocab_size) {
  LlamaConfig model;
  model.dim = dim;
  model.hidden_dim = hidden_dim;
  model.n_layers = n_layers;
  model.n_heads = n_heads;
  model.n_kv_heads = n_kv_heads;
  model.head_dim = head_dim;
  model.vocab_size = vocab_size;
  return model;
}

Status check_model_shape(const LlamaConfig& m) {
  if (m.n_layers < 1 || m.n_heads < 1 || m.n_kv_heads < 1 || m.head_dim < 1) {
    return invalid_argument("model shape needs layers, heads, kv heads and head_dim >= 1 (got " +
                            std::to_string(m.n_layers) + ", " + std::to_string(m.n_heads) + ", " +
                            std::to_string(m.n_kv_heads) + ", " + std::to_string(m.head_dim) + ")");
  }
  return ok_status();
}

Result<int64_t> read_int(const nlohmann::json& json, const char* key, const std::string& file) {
  const auto it = json.find(key);
  if (it == json.end()) return invalid_argument(file + ": missing key \"" + key + "\"");
  if (!it->is_number_integer() || it->get<int64_t>() < 1) {
    return invalid_argument(file + ": \"" + key + "\" must be a positive integer, got " + it->dump());
  }
  return it->get<int64_t>();
}

// Token counts of pulsar's sink and of each summary Σ0..Σ(n-2), at the budget.
std::vector<int64_t> pulsar_summary_tokens(const std::vector<TokenRange>& blocks, const AttentionConfig& config,
                                           int64_t sink) {
  const int64_t budget = summary_budget_chunks(config, blocks.front().size()) * config.chunk_tokens;
  std::vector<int64_t> tokens;
  for (size_t j = 0; j + 1 < blocks.size(); ++j) {
    const int64_t eligible = blocks[j].size() - (j == 0 ? sink : 0);
    tokens.push_back(std::min(budget, eligible));
  }
  return tokens;
}

}  // namespace

Result<LlamaConfig> cost_model_preset(std::string_view name) {
  if (name == "llama-3.1-8b") return model_shape(4096, 14336, 32, 32, 8, 128, 128256);
  if (name == "llama-3.1-70b") return model_shape(8192, 28672, 80, 64, 8, 128, 128256);
  return invalid_argument("unknown model preset \"" + std::string(name) + "\" (known: llama-3.1-8b, llama-3.1-70b)");
}

Result<LlamaConfig> read_cost_model_config(const std::filesystem::path& config_json) {
  const std::string file = config_json.string();
  std::ifstream in(config_json);
  if (!in) return not_found("cannot open model config " + file);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(file + ": " + e.what());
  }
  if (!json.is_object()) return invalid_argument(file + ": expected a JSON object");

  LlamaConfig model;
  const std::pair<const char*, int64_t*> required[] = {
      {"hidden_size", &model.dim},       {"intermediate_size", &model.hidden_dim},
      {"num_hidden_layers", &model.n_layers}, {"num_attention_heads", &model.n_heads},
      {"vocab_size", &model.vocab_size},
  };
  for (const auto& [key, field] : required) {
    Result<int64_t> value = read_int(json, key, file);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  model.n_kv_heads = model.n_heads;
  model.head_dim = model.dim / model.n_heads;
  const std::pair<const char*, int64_t*> optional[] = {{"num_key_value_heads", &model.n_kv_heads},
                                                       {"head_dim", &model.head_dim}};
  for (const auto& [key, field] : optional) {
    if (!json.contains(key) || json[key].is_null()) continue;
    Result<int64_t> value = read_int(json, key, file);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  if (Status s = check_model_shape(model); !s.ok()) return Status(s.code(), file + ": " + s.message());
  return model;
}

double causal_attention_flops(const LlamaConfig& model, int64_t n) {
  const double tokens = static_cast<double>(n);
  return 2.0 * tokens * tokens * static_cast<double>((model.n_heads + model.n_kv_heads) * model.head_dim);
}

int64_t kv_bytes_per_token(const LlamaConfig& model, KvDType kv_dtype) {
  return 2 * model.n_layers * kv_bytes(kv_dtype, model.n_kv_heads * model.head_dim);
}

int64_t attention_activation_bytes_per_token(const LlamaConfig& model) {
  return (2 * model.n_heads + 2 * model.n_kv_heads) * model.head_dim * kCostBytesPerElement;
}

Result<Phase1Cost> phase1_cost(const LlamaConfig& model, int64_t context_tokens, int n_ranks,
                               const AttentionConfig& config, KvDType kv_dtype) {
  if (Status s = check_model_shape(model); !s.ok()) return s;
  if (Status s = check_kv_dtype(kv_dtype, model.head_dim); !s.ok()) return s;
  if (Status s = validate_attention_config(config); !s.ok()) return s;
  if (context_tokens < 1) {
    return invalid_argument("context_tokens: " + std::to_string(context_tokens) +
                            " (Phase 1 has nothing to cost for an empty context)");
  }
  const std::string& algorithm = config.algorithm;
  const bool whole_context = algorithm == "dense" || algorithm == "streaming";
  Result<BlockLayout> layout_or =
      split_into_blocks(context_tokens, whole_context ? context_tokens : config.block_size, n_ranks);
  if (!layout_or.ok()) return layout_or.status();
  const BlockLayout& layout = *layout_or;
  const std::vector<TokenRange>& blocks = layout.blocks;
  const int64_t first_block = blocks.front().size();

  int64_t largest_shard = 0;
  for (int r = 0; r < n_ranks; ++r) largest_shard = std::max(largest_shard, layout.shard(r).size());

  Phase1Cost cost;
  cost.algorithm = algorithm;
  cost.context_tokens = context_tokens;
  cost.n_ranks = n_ranks;
  int64_t kv_tokens = largest_shard;
  int64_t in_flight_kv_tokens = 0;

  // boundary_overlap: block i > 0 also reads the tail of block i-1 from `not_before` on.
  const auto lead = [&](size_t i, int64_t not_before) {
    const TokenRange& previous = blocks[i - 1];
    return previous.end - std::max({previous.end - config.boundary_overlap, previous.begin, std::min(not_before, previous.end)});
  };
  if (whole_context) {
    cost.critical_path_tokens = first_block;
  } else if (algorithm == "no-anchor") {
    cost.critical_path_tokens = first_block;
    for (size_t i = 1; i < blocks.size(); ++i) {
      cost.critical_path_tokens = std::max(cost.critical_path_tokens, lead(i, 0) + blocks[i].size());
    }
  } else if (algorithm == "star") {
    const int64_t anchor = std::min(config.anchor_size < 0 ? first_block : config.anchor_size, first_block);
    cost.critical_path_tokens = first_block;
    for (size_t i = 1; i < blocks.size(); ++i) {
      cost.critical_path_tokens = std::max(cost.critical_path_tokens, anchor + lead(i, anchor) + blocks[i].size());
    }
  } else if (algorithm == "ring") {
    cost.critical_path_tokens = largest_shard;
    in_flight_kv_tokens = largest_shard;
  } else if (algorithm == "pulsar") {
    const int64_t sink = std::min(config.sink_tokens, first_block);
    const std::vector<int64_t> summaries = pulsar_summary_tokens(blocks, config, sink);
    std::vector<int64_t> prefix(blocks.size(), 0);  // [sink ‖ Σ0..Σi-1] before block i > 0
    cost.critical_path_tokens = first_block;
    for (size_t i = 1; i < blocks.size(); ++i) {
      prefix[i] = (i == 1 ? sink : prefix[i - 1]) + summaries[i - 1];
      cost.critical_path_tokens = std::max(cost.critical_path_tokens, prefix[i] + lead(i, 0) + blocks[i].size());
    }
    if (config.keep_prefix_kv) {
      kv_tokens = 0;
      for (int r = 0; r < n_ranks; ++r) {
        const BlockRun run = layout.rank_runs[static_cast<size_t>(r)];
        const int64_t kept_prefix = run.empty() ? 0 : prefix[static_cast<size_t>(run.last - 1)];
        kv_tokens = std::max(kv_tokens, layout.shard(r).size() + kept_prefix);
      }
    }
  }

  if (algorithm == "ring") {
    for (int r = 0; r < n_ranks; ++r) {
      const TokenRange segment = layout.shard(r);
      cost.attention_flops_per_layer =
          std::max(cost.attention_flops_per_layer,
                   causal_attention_flops(model, segment.end) - causal_attention_flops(model, segment.begin));
    }
  } else if (algorithm == "streaming" && context_tokens > config.streaming_sink + config.streaming_window) {
    const int64_t visible = config.streaming_sink + config.streaming_window;
    const double per_key = 4.0 * static_cast<double>((model.n_heads + model.n_kv_heads) * model.head_dim);
    cost.attention_flops_per_layer = causal_attention_flops(model, visible) +
                                     per_key * static_cast<double>(visible) *
                                         static_cast<double>(context_tokens - visible);
  } else {
    cost.attention_flops_per_layer = causal_attention_flops(model, cost.critical_path_tokens);
  }

  cost.activation_bytes_per_rank = cost.critical_path_tokens * attention_activation_bytes_per_token(model) +
                                   in_flight_kv_tokens * 2 * model.n_kv_heads * model.head_dim * kCostBytesPerElement;
  cost.kv_bytes_per_rank = kv_tokens * kv_bytes_per_token(model, kv_dtype);
  return cost;
}

}  // namespace star
