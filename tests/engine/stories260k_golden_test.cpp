// stories260K.gguf against llama.cpp's golden outputs: greedy continuations exactly. The forward
// pass is driven step by step here, and through the engine (Phase 1 + Phase 2) separately.
//
// Logits: llama.cpp keeps its KV cache in float16 and rounds Q and the softmax probabilities to
// float16, so golden.json's logits sit up to 4.2e-3 from the exact model (tests/reference/
// make_stories_fixtures.py shows this: with those roundings it reproduces golden.json). We compute
// in float32 and check the top-5 logits to 1e-4 against the exact float64 reference that script
// writes from the independent llama2.c checkpoint, and to 1e-2 against golden.json (measured gap: at most 4.2e-3).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "star/attention/layer_attentions.h"
#include "star/dist/self_communicator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"
#include "star/tokenizer/streaming_decoder.h"
#include "support/test_paths.h"

namespace star {
namespace {

nlohmann::json golden(const std::filesystem::path& dir) {
  std::ifstream in(dir / "golden.json");
  return nlohmann::json::parse(in);
}

nlohmann::json exact_reference() {
  std::ifstream in(testing::source_dir() / "tests/fixtures/stories/exact_logits.json");
  return nlohmann::json::parse(in);
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(Stories260kGolden, ForwardPassMatchesLlamaCppStepByStep) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const LlamaConfig& c = model->llama->config();
  const nlohmann::json cases = golden(dir)["generate"];
  const nlohmann::json exact = exact_reference()["generate"];
  ASSERT_EQ(cases.size(), 3u);
  ASSERT_EQ(exact.size(), 3u);
  for (size_t c_index = 0; c_index < cases.size(); ++c_index) {
    const nlohmann::json& g = cases[c_index];
    SCOPED_TRACE(g["prompt"].get<std::string>());
    ASSERT_EQ(exact[c_index]["prompt_ids"], g["prompt_ids"]);
    std::vector<int32_t> tokens = g["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = g["greedy_ids"].get<std::vector<int32_t>>();
    KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
    LocalCausalAttention attention(AttentionShape::of(c), cache);
    std::vector<int32_t> positions(tokens.size());
    std::iota(positions.begin(), positions.end(), 0);
    std::vector<int32_t> generated;
    for (size_t step = 0; step < expected.size(); ++step) {
      Result<std::vector<float>> logits = model->llama->forward(tokens, positions, attention, 1);
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      if (step < g["steps"].size()) {
        for (const auto& pair : g["steps"][step]["top5"]) {
          const int id = pair[0].get<int>();
          EXPECT_NEAR((*logits)[id], pair[1].get<float>(), 1e-2) << "llama.cpp, step " << step << " token " << id;
        }
        for (const auto& pair : exact[c_index]["steps"][step]["top5"]) {
          const int id = pair[0].get<int>();
          EXPECT_NEAR((*logits)[id], pair[1].get<double>(), 1e-4) << "exact, step " << step << " token " << id;
        }
      }
      const int32_t next = argmax(*logits);
      generated.push_back(next);
      positions.assign(1, static_cast<int32_t>(cache.tokens()));
      tokens.assign(1, next);
    }
    EXPECT_EQ(generated, expected);
  }
}

TEST(Stories260kGolden, EngineReproducesGreedyContinuations) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SelfCommunicator comm;
  const nlohmann::json cases = golden(dir)["generate"];
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& g : cases) {
    SCOPED_TRACE(g["prompt"].get<std::string>());
    const auto prompt = g["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = g["greedy_ids"].get<std::vector<int32_t>>();
    // Split the prompt into context and query so Phase 1 and Phase 2 both take part.
    InferenceRequest request;
    const size_t split = prompt.size() / 2;
    request.context_ids.assign(prompt.begin(), prompt.begin() + split);
    request.query_ids.assign(prompt.begin() + split, prompt.end());
    request.attention.algorithm = "star";
    request.generation.max_tokens = static_cast<int64_t>(expected.size());
    request.generation.ignore_eos = true;
    Result<InferenceOutcome> out = run_inference(*model, comm, request);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(out->generation.tokens, expected);
    EXPECT_EQ(out->generation.finish_reason, FinishReason::kLength);
    StreamingDecoder decoder(*model->tokenizer, /*skip_special=*/true, /*continues_text=*/true);
    std::string text;
    for (int32_t id : expected) text += decoder.push(id);
    EXPECT_EQ(out->generation.text, text + decoder.flush());
  }
}

TEST(Stories260kGolden, GreedyTextStartsLikeTheReadme) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SelfCommunicator comm;
  InferenceRequest request;
  request.query_ids = model->tokenizer->encode("Once upon a time", EncodeOptions{.add_bos = true});
  request.generation.max_tokens = 30;
  Result<InferenceOutcome> out = run_inference(*model, comm, request);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->generation.text.rfind(", there was a little girl named Lily. She loved to play outside", 0), 0u)
      << out->generation.text;
}

}  // namespace
}  // namespace star
