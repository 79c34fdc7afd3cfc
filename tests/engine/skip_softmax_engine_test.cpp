// Skip Softmax through the engine (stories260K, Phase 1 + Phase 2): S = 1e-30 in both phases gives
// the dense answer and query logits bit for bit while the tiles are counted in each phase; a large
// S skips tiles of the real model's attention and says so in the counts.
#include <gtest/gtest.h>

#include <string>

#include "star/dist/self_communicator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"
#include "support/test_paths.h"

namespace star {
namespace {

InferenceRequest story_request(const Tokenizer& tok, double prefill_s, double decode_s) {
  std::string story;
  for (int i = 0; i < 12; ++i) {
    story += "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. ";
  }
  InferenceRequest r;
  r.context_ids = tok.encode(story, EncodeOptions{.add_bos = true});
  r.query_ids = tok.encode("One day, Lily", EncodeOptions{.add_bos = false});
  r.attention.algorithm = "dense";
  r.attention.sparse.algorithm = "skip_softmax";
  r.attention.sparse.skip_softmax = {prefill_s, decode_s};
  r.generation.max_tokens = 24;
  r.generation.ignore_eos = true;
  r.generation.return_query_logits = true;
  return r;
}

TEST(SkipSoftmaxEngine, TinyScaleFactorIsDenseAndCountsBothPhases) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SelfCommunicator comm;
  Result<InferenceOutcome> dense = run_inference(*model, comm, story_request(*model->tokenizer, 0.0, 0.0));
  ASSERT_TRUE(dense.ok()) << dense.status().to_string();
  EXPECT_EQ(dense->phase1_skip_softmax_tiles, SkipSoftmaxTiles{});
  EXPECT_EQ(dense->generation.skip_softmax_tiles, SkipSoftmaxTiles{});

  Result<InferenceOutcome> tiny = run_inference(*model, comm, story_request(*model->tokenizer, 1e-30, 1e-30));
  ASSERT_TRUE(tiny.ok()) << tiny.status().to_string();
  EXPECT_EQ(tiny->generation.tokens, dense->generation.tokens);
  EXPECT_EQ(tiny->generation.query_logits, dense->generation.query_logits);  // bit for bit
  EXPECT_GT(tiny->phase1_skip_softmax_tiles.visited, 0);
  EXPECT_EQ(tiny->phase1_skip_softmax_tiles.skipped, 0);
  EXPECT_GT(tiny->generation.skip_softmax_tiles.visited, 0);
  EXPECT_EQ(tiny->generation.skip_softmax_tiles.skipped, 0);
}

// Visited tiles depend only on the lengths (ignore_eos fixes them), skipped ones on S: the query
// counts under the prefill S and each generated token under the decode S.
TEST(SkipSoftmaxEngine, PhasesUseTheirOwnScaleFactor) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  SelfCommunicator comm;
  constexpr double kS = 350;  // lambda = S / L close to 1 for this short context
  Result<InferenceOutcome> prefill = run_inference(*model, comm, story_request(*model->tokenizer, kS, 0.0));
  Result<InferenceOutcome> decode = run_inference(*model, comm, story_request(*model->tokenizer, 0.0, kS));
  Result<InferenceOutcome> both = run_inference(*model, comm, story_request(*model->tokenizer, kS, kS));
  for (const auto* r : {&prefill, &decode, &both}) ASSERT_TRUE(r->ok()) << r->status().to_string();
  EXPECT_GT(prefill->phase1_skip_softmax_tiles.visited, 0);
  EXPECT_EQ(decode->phase1_skip_softmax_tiles, SkipSoftmaxTiles{});
  EXPECT_EQ(both->phase1_skip_softmax_tiles, prefill->phase1_skip_softmax_tiles);
  const SkipSoftmaxTiles query = prefill->generation.skip_softmax_tiles;
  const SkipSoftmaxTiles generated = decode->generation.skip_softmax_tiles;
  EXPECT_GT(query.visited, 0);
  EXPECT_GT(generated.skipped, 0);  // single-token vote groups skip on this model's attention
  EXPECT_LT(generated.skipped, generated.visited);
  EXPECT_EQ(both->generation.skip_softmax_tiles.visited, query.visited + generated.visited);
}

}  // namespace
}  // namespace star
