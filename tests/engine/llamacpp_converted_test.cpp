// A Llama-3-style model converted by llama.cpp's own convert_hf_to_gguf.py (gpt2 vocabulary with
// the llama-bpe pre-tokenizer, rope_freqs.weight for rope_scaling llama3, tied output) loads and
// gives the HF directory's tokens and logits. tests/reference/convert_with_llamacpp.sh makes the
// pair (scripts/test.sh runs it); without it the tests skip.
#include <gtest/gtest.h>


#include "engine/prefill_logits.h"
#include "star/engine/runtime_model.h"
#include "star/model/llama_model.h"
#include "star/model/model_loader.h"
#include "support/model_cache.h"

namespace star {
namespace {

#define STAR_REQUIRE_CONVERTED(var)                                                              \
  const std::filesystem::path var = ::star::testing::llamacpp_converted_dir();                   \
  if (var.empty()) {                                                                             \
    GTEST_SKIP() << "no llama.cpp conversion in " << ::star::testing::model_cache_dir()          \
                 << "/llamacpp-llama3; run tests/reference/convert_with_llamacpp.sh";            \
  }

TEST(LlamaCppConverted, SameLogitsAsTheHfDirectory) {
  STAR_REQUIRE_CONVERTED(dir);
  Result<LoadedModel> gguf = load_model(dir / "model-f32.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  Result<LoadedModel> hf = load_model(dir / "hf");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  ASSERT_EQ(hf->config.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(gguf->config.rope_scaling.type, RopeScaling::Type::kFreqFactors);
  EXPECT_EQ(gguf->config.rope_scaling.freq_factors.size(), static_cast<size_t>(hf->config.head_dim / 2));
  EXPECT_TRUE(gguf->config.tie_word_embeddings);
  EXPECT_EQ(gguf->config.rope_layout, RopeLayout::kAdjacent);
  EXPECT_EQ(hf->config.rope_layout, RopeLayout::kHalf);

  const int64_t vocab = hf->config.vocab_size;
  const LlamaConfig unscaled_config = [&] {
    LlamaConfig c = hf->config;
    c.rope_scaling = RopeScaling{};
    return c;
  }();
  Result<LoadedModel> hf_again = load_model(dir / "hf");
  ASSERT_TRUE(hf_again.ok());
  Result<LlamaModel> a = LlamaModel::create(gguf->config, std::move(gguf->weights));
  Result<LlamaModel> b = LlamaModel::create(hf->config, std::move(hf->weights));
  Result<LlamaModel> unscaled = LlamaModel::create(unscaled_config, std::move(hf_again->weights));
  ASSERT_TRUE(a.ok() && b.ok() && unscaled.ok());
  // Past original_max_position_embeddings / factor the scaled frequencies turn visibly.
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 300; ++i) ids.push_back(static_cast<int32_t>((i * 97 + 13) % vocab));
  const std::vector<float> la = testing::prefill_logits(*a, ids), lb = testing::prefill_logits(*b, ids),
                           lu = testing::prefill_logits(*unscaled, ids);
  ASSERT_EQ(la.size(), lb.size());
  float worst = 0, scaling_effect = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    worst = std::max(worst, std::abs(la[i] - lb[i]));
    scaling_effect = std::max(scaling_effect, std::abs(lb[i] - lu[i]));
  }
  // The converter's float32 factors and HF's llama3 formula round differently: ~1e-6 relative.
  EXPECT_LT(worst, 1e-4f);
  EXPECT_GT(scaling_effect, 100 * worst) << "the test positions do not exercise the rope scaling";
}

TEST(LlamaCppConverted, SameTokensAndStopsAsTheHfDirectory) {
  STAR_REQUIRE_CONVERTED(dir);
  Result<RuntimeModel> gguf = open_model(dir / "model-f32.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  Result<RuntimeModel> hf = open_model(dir / "hf");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily.", "  leading spaces and trailing  ",
      "Numbers 1234567 and 3.14159", "unicode: café 日本語 🚀", "code(x) { return x * 2; }\n\n\tdone",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"};
  for (const std::string& text : texts) {
    for (bool special : {false, true}) {
      const EncodeOptions options{.add_bos = true, .parse_special = special};
      EXPECT_EQ(gguf->tokenizer->encode(text, options), hf->tokenizer->encode(text, options))
          << text << " (parse_special " << special << ")";
    }
  }
  EXPECT_EQ(gguf->chat_template, hf->chat_template);
  EXPECT_EQ(gguf->llama->config().bos_token_id, hf->llama->config().bos_token_id);
  std::vector<int32_t> gguf_stops = gguf->llama->config().eos_token_ids;
  std::vector<int32_t> hf_stops = hf->llama->config().eos_token_ids;
  std::sort(gguf_stops.begin(), gguf_stops.end());
  std::sort(hf_stops.begin(), hf_stops.end());
  EXPECT_EQ(gguf_stops, hf_stops);
}

}  // namespace
}  // namespace star
