// The project's trained model (models/needle-llama) against HF's libraries (fixtures made by
// tests/reference/make_needle_fixtures.py): the C++ tokenizer gives HF tokenizers' ids, the forward
// pass gives transformers' logits, and the engine's greedy answers to needle questions (dense and
// star) are transformers' answers.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "star/attention/layer_attentions.h"
#include "star/dist/self_communicator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"
#include "support/test_paths.h"

namespace star {
namespace {

std::filesystem::path model_dir() { return testing::source_dir() / "models" / "needle-llama"; }

nlohmann::json reference() {
  std::ifstream in(testing::source_dir() / "tests/fixtures/needle/reference.json");
  EXPECT_TRUE(in) << "fixture missing";
  return nlohmann::json::parse(in);
}

TEST(NeedleModel, TokenizerMatchesHf) {
  Result<RuntimeModel> model = open_model(model_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const nlohmann::json cases = reference()["tokenizer"];
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    // HF's encode() matches special-token text; so does ours with parse_special.
    const std::vector<int32_t> ids = model->tokenizer->encode(text, {.parse_special = true});
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(model->tokenizer->decode(ids, /*skip_special=*/false), text);
  }
}

TEST(NeedleModel, LogitsMatchTransformers) {
  Result<RuntimeModel> model = open_model(model_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const LlamaConfig& c = model->llama->config();
  const nlohmann::json prompts = reference()["prompts"];
  ASSERT_FALSE(prompts.empty());
  for (const auto& p : prompts) {
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> positions(ids.size());
    std::iota(positions.begin(), positions.end(), 0);
    KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
    LocalCausalAttention attention(AttentionShape::of(c), cache);
    Result<std::vector<float>> logits = model->llama->forward(ids, positions, attention, 1);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    const auto expected = p["last_logits"].get<std::vector<float>>();
    ASSERT_EQ(static_cast<int64_t>(expected.size()), c.vocab_size);
    float worst = 0;
    for (int64_t v = 0; v < c.vocab_size; ++v) worst = std::max(worst, std::abs((*logits)[v] - expected[v]));
    EXPECT_LT(worst, 1e-4f) << p["question"];
  }
}

TEST(NeedleModel, EngineAnswersAsTransformersDoAndFindsTheNeedle) {
  Result<RuntimeModel> model = open_model(model_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SelfCommunicator comm;
  const nlohmann::json prompts = reference()["prompts"];
  ASSERT_FALSE(prompts.empty());
  for (const auto& p : prompts) {
    const auto expected = p["greedy_answer_ids"].get<std::vector<int32_t>>();
    // transformers' answer is the needle's value (the fixture records what it was asked for).
    EXPECT_EQ(p["greedy_answer_text"].get<std::string>(), " " + p["value"].get<std::string>());
    for (const std::string algorithm : {"dense", "star"}) {
      SCOPED_TRACE(algorithm + ": " + p["question"].get<std::string>());
      InferenceRequest request;
      request.context_ids = model->tokenizer->encode(p["context"].get<std::string>(), EncodeOptions{.add_bos = true});
      request.query_ids = model->tokenizer->encode(p["question"].get<std::string>());
      std::vector<int32_t> prompt = request.context_ids;
      prompt.insert(prompt.end(), request.query_ids.begin(), request.query_ids.end());
      ASSERT_EQ(prompt, p["ids"].get<std::vector<int32_t>>());
      request.attention.algorithm = algorithm;
      request.attention.block_size = 64;
      request.generation.max_tokens = static_cast<int64_t>(expected.size());
      Result<InferenceOutcome> out = run_inference(*model, comm, request);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      // transformers' answer ends with EOS; the engine stops on it and leaves it out of the tokens.
      ASSERT_FALSE(expected.empty());
      std::vector<int32_t> with_eos = out->generation.tokens;
      with_eos.push_back(expected.back());
      EXPECT_EQ(with_eos, expected);
      EXPECT_EQ(model->llama->config().eos_token_ids, std::vector<int32_t>{expected.back()});
      EXPECT_EQ(out->generation.finish_reason, FinishReason::kStop);
      EXPECT_EQ(out->generation.text, " " + p["value"].get<std::string>());
    }
  }
}

}  // namespace
}  // namespace star
