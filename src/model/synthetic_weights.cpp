#include "synthetic_weights.h"

#include <cmath>
#include <numbers>
#include <random>

#include "llama_tensor_table.h"

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

}  // namespace

std::vector<SyntheticTensorPlan> plan_synthetic_tensors(const LlamaConfig& c) {
  const double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(c.n_layers));
  auto fan_in = [](int64_t n) { return 1.0 / std::sqrt(static_cast<double>(n)); };
  std::vector<SyntheticTensorPlan> plan;
  plan.push_back({"model.embed_tokens.weight", "token_embd.weight", {c.vocab_size, c.dim}, 0.0, fan_in(c.dim)});
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    for (const LayerTensorSpec& spec : llama_layer_tensors()) {
      std::vector<int64_t> shape = spec.shape(c);
      SyntheticTensorPlan t{hf_layer_tensor_name(layer, spec), gguf_layer_tensor_name(layer, spec), shape, 0.0, 0.0};
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
  plan.push_back({"model.norm.weight", "output_norm.weight", {c.dim}, 1.0, 0.02});
  if (!c.tie_word_embeddings) {
    plan.push_back({"lm_head.weight", "output.weight", {c.vocab_size, c.dim}, 0.0, fan_in(c.dim)});
  }
  return plan;
}

std::vector<float> synthetic_tensor_values(uint64_t seed, const SyntheticTensorPlan& tensor) {
  size_t count = 1;
  for (int64_t d : tensor.shape) count *= static_cast<size_t>(d);
  return normal_samples(seed, tensor.hf_name, count, tensor.mean, tensor.stddev);
}


}  // namespace star
