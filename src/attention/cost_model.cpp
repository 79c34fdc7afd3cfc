#include "star/attention/cost_model.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/attention/algorithm_registry.h"
#include "star/attention/attention_config_io.h"
#include "star/attention/block_ranges.h"

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
  // validate_attention_config refused names the registry does not hold.
  const AlgorithmEntry& entry = *find_algorithm(config.algorithm);
  Result<BlockLayout> layout =
      split_into_blocks(context_tokens, entry.blocked ? config.block_size : context_tokens, n_ranks);
  if (!layout.ok()) return layout.status();
  int64_t largest_shard = 0;
  for (int r = 0; r < n_ranks; ++r) largest_shard = std::max(largest_shard, layout->shard(r).size());
  const Phase1Work work = entry.phase1_work(
      {.model = model, .config = config, .context_tokens = context_tokens, .n_ranks = n_ranks, .layout = *layout,
       .largest_shard_tokens = largest_shard});

  Phase1Cost cost;
  cost.algorithm = config.algorithm;
  cost.context_tokens = context_tokens;
  cost.n_ranks = n_ranks;
  cost.critical_path_tokens = work.critical_path_tokens;
  cost.attention_flops_per_layer = work.attention_flops_per_layer;
  cost.activation_bytes_per_rank = cost.critical_path_tokens * attention_activation_bytes_per_token(model) +
                                   work.in_flight_kv_tokens * 2 * model.n_kv_heads * model.head_dim * kCostBytesPerElement;
  cost.kv_bytes_per_rank = work.kv_tokens_per_rank * kv_bytes_per_token(model, kv_dtype);
  return cost;
}

}  // namespace star
