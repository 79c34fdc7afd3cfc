// Random star-mkmodel models against HF transformers' LlamaForCausalLM (fixtures made by
// tests/reference/make_llama_fixtures.py): Llama 3.1 rope scaling, GQA, tied and untied output
// projections, F32 and BF16 weights, positions near 0 and far from it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "star/attention/layer_attentions.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/engine/runtime_model.h"
#include "support/temp_dir.h"
#include "support/test_paths.h"

namespace star {
namespace {

// The model's arithmetic in float32, as transformers': capped below AVX-512, a prefill of BF16
// weights takes sgemm instead of the bf16 products (tests/engine/stored_weights_test.cpp bounds
// those against this path).
struct Float32Prefill {
  Float32Prefill() { cpu::limit_isa(cpu::Isa::kAvx2); }
  ~Float32Prefill() { cpu::limit_isa(cpu::Isa::kAvx512); }
};

TEST(TransformersReference, LogitsMatchLlamaForCausalLM) {
  const Float32Prefill float32_prefill;
  std::ifstream in(testing::source_dir() / "tests/fixtures/llama/transformers_logits.json");
  ASSERT_TRUE(in) << "fixture missing";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_FALSE(fixture["models"].empty());
  for (const auto& m : fixture["models"]) {
    SCOPED_TRACE(m["name"].get<std::string>());
    testing::TempDir dir;
    std::string cmd = std::string(STAR_MKMODEL_PATH) + " --out " + dir.path().string();
    for (const auto& arg : m["mkmodel_args"]) cmd += " " + arg.get<std::string>();
    ASSERT_EQ(std::system((cmd + " >/dev/null").c_str()), 0) << cmd;
    Result<RuntimeModel> model = open_model(dir.path());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const LlamaConfig& c = model->llama->config();
    for (const auto& tc : m["cases"]) {
      const auto ids = tc["ids"].get<std::vector<int32_t>>();
      const auto positions = tc["positions"].get<std::vector<int32_t>>();
      KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
      LocalCausalAttention attention(AttentionShape::of(c), cache);
      const int64_t n = static_cast<int64_t>(ids.size());
      Result<std::vector<float>> logits = model->llama->forward(ids, positions, attention, n);
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      const auto rows = tc["rows"].get<std::vector<int64_t>>();
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto expected = tc["logits"][i].get<std::vector<float>>();
        ASSERT_EQ(static_cast<int64_t>(expected.size()), c.vocab_size);
        float worst = 0;
        for (int64_t v = 0; v < c.vocab_size; ++v) {
          worst = std::max(worst, std::abs((*logits)[rows[i] * c.vocab_size + v] - expected[v]));
        }
        EXPECT_LT(worst, 1e-4f) << "row " << rows[i] << " starting at position " << positions[0];
      }
    }
  }
}

}  // namespace
}  // namespace star
