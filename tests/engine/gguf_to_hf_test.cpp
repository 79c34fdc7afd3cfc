// stories260K converted to HF layout inside the test (Q/K rows permuted from adjacent-pair to
// half-vector RoPE order, as the model's README gives) loads through the HF path and gives the
// same logits as the GGUF path.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/prefill_logits.h"
#include "star/model/llama_model.h"
#include "star/model/model_loader.h"
#include "star/model/safetensors.h"
#include "support/temp_dir.h"
#include "support/llama_cpp_rope_factors.h"
#include "support/test_paths.h"

namespace star {
namespace {

// w.reshape(heads, d/2, 2, in).transpose(1, 2).reshape(heads*d, in)
std::vector<float> adjacent_to_half(const WeightTensor& w, int64_t heads, int64_t d) {
  const int64_t in = w.shape[1];
  std::vector<float> out(w.numel());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < d / 2; ++i)
      for (int64_t p = 0; p < 2; ++p) {
        const float* src = w.f32() + ((h * d) + 2 * i + p) * in;
        std::copy(src, src + in, out.data() + ((h * d) + p * (d / 2) + i) * in);
      }
  return out;
}

// Writes stories260K's GGUF weights as an HF directory (Q/K rows in half-vector order), with
// `extra_config` merged into config.json.
void write_hf_copy(const LoadedModel& gguf, const nlohmann::json& extra_config, const std::filesystem::path& dir) {
  const LlamaConfig& c = gguf.config;
  nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
      {"hidden_size", c.dim}, {"intermediate_size", c.hidden_dim}, {"num_hidden_layers", c.n_layers},
      {"num_attention_heads", c.n_heads}, {"num_key_value_heads", c.n_kv_heads}, {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings}, {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta}, {"tie_word_embeddings", true}, {"bos_token_id", 1}, {"eos_token_id", 2}};
  config.update(extra_config);
  std::ofstream(dir / "config.json") << config.dump(1);

  std::vector<std::vector<float>> permuted;  // keeps the permuted Q/K alive until written
  std::vector<SafetensorsTensor> tensors;
  auto add = [&](std::string name, const WeightTensor& w, const float* data = nullptr) {
    const float* p = data ? data : w.f32();  // stories260K.gguf stores F32
    tensors.push_back({std::move(name), DType::kF32, w.shape,
                       std::span<const std::byte>(reinterpret_cast<const std::byte*>(p), w.bytes())});
  };
  permuted.reserve(2 * c.n_layers);
  add("model.embed_tokens.weight", gguf.weights.embed);
  add("model.norm.weight", gguf.weights.final_norm);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& w = gguf.weights.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    permuted.push_back(adjacent_to_half(w.wq, c.n_heads, c.head_dim));
    add(p + "self_attn.q_proj.weight", w.wq, permuted.back().data());
    permuted.push_back(adjacent_to_half(w.wk, c.n_kv_heads, c.head_dim));
    add(p + "self_attn.k_proj.weight", w.wk, permuted.back().data());
    add(p + "self_attn.v_proj.weight", w.wv);
    add(p + "self_attn.o_proj.weight", w.wo);
    add(p + "mlp.gate_proj.weight", w.w_gate);
    add(p + "mlp.up_proj.weight", w.w_up);
    add(p + "mlp.down_proj.weight", w.w_down);
    add(p + "input_layernorm.weight", w.attn_norm);
    add(p + "post_attention_layernorm.weight", w.ffn_norm);
  }
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", tensors).ok());
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

TEST(GgufToHf, SameLogitsThroughBothLayouts) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<LoadedModel> gguf = load_model(dir / "stories260K.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  ASSERT_EQ(gguf->config.rope_layout, RopeLayout::kAdjacent);
  testing::TempDir hf;
  write_hf_copy(*gguf, nlohmann::json::object(), hf.path());

  Result<LoadedModel> converted = load_model(hf.path());
  ASSERT_TRUE(converted.ok()) << converted.status().to_string();
  EXPECT_EQ(converted->config.rope_layout, RopeLayout::kHalf);
  Result<LlamaModel> a = LlamaModel::create(gguf->config, std::move(gguf->weights));
  Result<LlamaModel> b = LlamaModel::create(converted->config, std::move(converted->weights));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426};
  // The layouts pair the rotated dimensions differently, so the q·k sums run in another order; on
  // the SSE build (the sanitizer variant) that reaches 1.1e-5 on logits of magnitude ~18.
  EXPECT_LT(max_abs_difference(testing::prefill_logits(*a, ids), testing::prefill_logits(*b, ids)), 2e-5f);
}

// Llama 3.1 RoPE scaling as a GGUF carries it (rope_freqs.weight: one factor per frequency) and
// as an HF config.json does (rope_scaling type llama3) give the same logits. stories260K's head
// dimension 8 has 4 frequencies; these parameters put one in each band.
TEST(GgufToHf, RopeFreqFactorsEqualHfLlama3Scaling) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<LoadedModel> gguf = load_model(dir / "stories260K.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  testing::TempDir hf;
  write_hf_copy(*gguf, {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 4.0}, {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 8.0}, {"original_max_position_embeddings", 256}}}},
                hf.path());
  Result<LoadedModel> converted = load_model(hf.path());
  ASSERT_TRUE(converted.ok()) << converted.status().to_string();
  ASSERT_EQ(converted->config.rope_scaling.type, RopeScaling::Type::kLlama3);

  LlamaConfig scaled = gguf->config;
  scaled.rope_scaling = testing::as_gguf_freq_factors(scaled.head_dim, scaled.rope_theta, converted->config.rope_scaling);
  const std::vector<float>& f = scaled.rope_scaling.freq_factors;
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_GT(f[1], 1.0f);
  EXPECT_LT(f[1], 4.0f);
  EXPECT_EQ(f[3], 4.0f);

  Result<LoadedModel> unscaled = load_model(dir / "stories260K.gguf");
  ASSERT_TRUE(unscaled.ok()) << unscaled.status().to_string();
  Result<LlamaModel> plain = LlamaModel::create(unscaled->config, std::move(unscaled->weights));
  Result<LlamaModel> a = LlamaModel::create(scaled, std::move(gguf->weights));
  Result<LlamaModel> b = LlamaModel::create(converted->config, std::move(converted->weights));
  ASSERT_TRUE(plain.ok() && a.ok() && b.ok());
  std::vector<int32_t> ids = {1};
  for (int32_t i = 0; i < 95; ++i) ids.push_back(260 + (i * 37) % 250);
  const std::vector<float> la = testing::prefill_logits(*a, ids), lb = testing::prefill_logits(*b, ids);
  // Dividing by a float32 factor and HF's llama3 formula round the frequencies differently
  // (~1e-7 relative); over 96 positions that reaches ~2.5e-5 on the logits.
  const float worst = max_abs_difference(la, lb);
  EXPECT_LT(worst, 1e-4f);
  // The scaling matters at these positions: without it the logits move by far more than that.
  EXPECT_GT(max_abs_difference(lb, testing::prefill_logits(*plain, ids)), 100 * worst);
}

}  // namespace
}  // namespace star
