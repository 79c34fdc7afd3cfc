#include "star/model/synthetic_model.h"

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "json_file.h"
#include "llama_tensor_table.h"
#include "star/model/config_validation.h"
#include "star/model/hf_config.h"
#include "star/model/safetensors.h"
#include "star/model/synthetic_tokenizer.h"

namespace star {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// `count` samples of mean + stddev·N(0, 1) from the tensor's own stream. mt19937_64's output is
// fixed by the standard; the mapping to [0, 1) and Box–Muller are written out here.
std::vector<float> normal_samples(uint64_t seed, std::string_view tensor, size_t count, double mean, double stddev) {
  std::mt19937_64 engine(splitmix64(seed ^ fnv1a64(tensor)));
  auto unit = [&engine] { return static_cast<double>(engine() >> 11) * 0x1.0p-53; };  // [0, 1)
  std::vector<float> out(count);
  for (size_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - unit()));  // 1 - u in (0, 1]: log is finite
    const double angle = 2.0 * std::numbers::pi * unit();
    out[i] = static_cast<float>(mean + stddev * radius * std::cos(angle));
    if (i + 1 < count) out[i + 1] = static_cast<float>(mean + stddev * radius * std::sin(angle));
  }
  return out;
}

struct TensorPlan {
  std::string name;
  std::vector<int64_t> shape;
  double mean;
  double stddev;
};

std::vector<TensorPlan> plan_tensors(const LlamaConfig& c) {
  const double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(c.n_layers));
  auto fan_in = [](int64_t n) { return 1.0 / std::sqrt(static_cast<double>(n)); };
  std::vector<TensorPlan> plan;
  plan.push_back({"model.embed_tokens.weight", {c.vocab_size, c.dim}, 0.0, fan_in(c.dim)});
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    for (const LayerTensorSpec& spec : llama_layer_tensors()) {
      std::vector<int64_t> shape = spec.shape(c);
      TensorPlan t{hf_layer_tensor_name(layer, spec), shape, 0.0, 0.0};
      if (shape.size() == 1) {
        t.mean = 1.0;
        t.stddev = 0.02;
      } else {
        const bool writes_residual =
            spec.member == &LlamaLayerWeights::wo || spec.member == &LlamaLayerWeights::w_down;
        t.stddev = fan_in(shape[1]) * (writes_residual ? residual_scale : 1.0);
      }
      plan.push_back(std::move(t));
    }
  }
  plan.push_back({"model.norm.weight", {c.dim}, 1.0, 0.02});
  if (!c.tie_word_embeddings) plan.push_back({"lm_head.weight", {c.vocab_size, c.dim}, 0.0, fan_in(c.dim)});
  return plan;
}

Status write_generation_config(const LlamaConfig& c, const std::filesystem::path& path) {
  nlohmann::ordered_json j;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_ids;
  j["transformers_version"] = "4.44.2";
  return write_json_file(path, j);
}

Result<LlamaConfig> config_with_tokenizer(const SyntheticModelSpec& spec, const SyntheticTokenizer& tokenizer) {
  LlamaConfig c = spec.config;
  if (c.rope_layout != RopeLayout::kHalf) return invalid_argument("synthetic models are HF checkpoints: rope_layout must be kHalf");
  c.vocab_size = std::max<int64_t>(c.vocab_size, tokenizer.size);
  c.bos_token_id = tokenizer.begin_of_text_id;
  c.eos_token_ids = {tokenizer.end_of_text_id, tokenizer.eot_id};
  if (Status s = validate_llama_config(c, "synthetic model config"); !s.ok()) return s;
  return c;
}

}  // namespace

Result<LlamaConfig> synthetic_model_config(const SyntheticModelSpec& spec) {
  auto tokenizer = make_synthetic_tokenizer(spec.config.max_position_embeddings);
  if (!tokenizer.ok()) return tokenizer.status();
  return config_with_tokenizer(spec, *tokenizer);
}

Status write_synthetic_model(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir) {
  auto tokenizer = make_synthetic_tokenizer(spec.config.max_position_embeddings);
  if (!tokenizer.ok()) return tokenizer.status();
  auto config = config_with_tokenizer(spec, *tokenizer);
  if (!config.ok()) return config.status();

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return unavailable(out_dir.string() + ": cannot create directory: " + ec.message());

  const std::vector<TensorPlan> plan = plan_tensors(*config);
  std::vector<std::vector<std::byte>> storage;
  std::vector<SafetensorsTensor> tensors;
  storage.reserve(plan.size());
  for (const TensorPlan& t : plan) {
    size_t count = 1;
    for (int64_t d : t.shape) count *= static_cast<size_t>(d);
    std::vector<float> values = normal_samples(spec.seed, t.name, count, t.mean, t.stddev);
    storage.push_back(encode_from_f32(values, spec.dtype));
    tensors.push_back({t.name, spec.dtype, t.shape, storage.back()});
  }
  if (Status s = write_safetensors(out_dir / "model.safetensors", tensors); !s.ok()) return s;
  if (Status s = write_json_file(out_dir / "config.json", hf_config_json(*config, spec.dtype)); !s.ok()) return s;
  if (Status s = write_generation_config(*config, out_dir / "generation_config.json"); !s.ok()) return s;
  if (Status s = write_json_file(out_dir / "tokenizer.json", tokenizer->tokenizer_json); !s.ok()) return s;
  return write_json_file(out_dir / "tokenizer_config.json", tokenizer->tokenizer_config);
}

}  // namespace star
