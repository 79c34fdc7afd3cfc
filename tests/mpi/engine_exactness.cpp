// The exactness checks of docs/algorithms.md across 1–4 ranks: ring equals dense, star and ring
// with one block (fewer blocks than ranks: the other ranks hold empty shards) equal dense, any split of a KV set merges to attention over the whole set, and a multi-token
// query sees every remote token. Also the per-rank KV bytes after Phase 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "star/attention/layer_attentions.h"
#include "star/backend/cpu/attention.h"
#include "star/dist/mpi_communicator.h"
#include "support/mpi_world.h"
#include "star/engine/inference.h"
#include "support/mpi_model.h"

namespace star {
namespace {

class EngineExactness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Small but with long positions, GQA 4:1 and llama3 rope scaling.
    dir_ = new testing::SharedModelDir("--preset tiny --seed 5 --heads 8 --kv-heads 2 --max-positions 32768");
    ASSERT_TRUE(dir_->ok());
    auto m = open_model(dir_->path());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  static InferenceRequest request(int64_t context_len, int64_t query_len, const std::string& algorithm,
                                  uint64_t seed = 1) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    const int64_t vocab = std::min<int64_t>(model_->llama->config().vocab_size, 250);
    InferenceRequest r;
    for (int64_t i = 0; i < context_len; ++i) r.context_ids.push_back(static_cast<int32_t>(rng() % vocab));
    for (int64_t i = 0; i < query_len; ++i) r.query_ids.push_back(static_cast<int32_t>(rng() % vocab));
    r.attention.algorithm = algorithm;
    r.generation.max_tokens = 12;
    r.generation.ignore_eos = true;
    r.generation.return_query_logits = true;
    return r;
  }

  InferenceOutcome run(const InferenceRequest& r) {
    Result<InferenceOutcome> out = run_inference(*model_, comm_, r);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? std::move(*out) : InferenceOutcome{};
  }

  static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  Communicator& comm_ = *world_;
  static testing::SharedModelDir* dir_;
  static RuntimeModel* model_;
};

testing::SharedModelDir* EngineExactness::dir_ = nullptr;
RuntimeModel* EngineExactness::model_ = nullptr;

TEST_F(EngineExactness, RingEqualsDense) {
  for (int64_t L : {int64_t{37}, int64_t{301}}) {
    SCOPED_TRACE("L=" + std::to_string(L));
    InferenceRequest dense = request(L, 6, "dense");
    InferenceRequest ring = request(L, 6, "ring");
    ring.attention.block_size = (L + comm_.size() - 1) / comm_.size();
    InferenceOutcome a = run(dense), b = run(ring);
    if (comm_.rank() != 0) continue;
    // Every query row, not just the last: query token 0 must see every remote token.
    EXPECT_LT(max_abs_diff(a.generation.query_logits, b.generation.query_logits), 1e-4f);
    EXPECT_EQ(a.generation.tokens, b.generation.tokens);
  }
}

// One block on any rank count: the block sits on the last rank, every other rank's shard is empty
// and its Phase 2 partial (log-sum-exp -inf) drops out of the merge exactly.
TEST_F(EngineExactness, StarAndRingWithOneBlockEqualDenseOnAnyRankCount) {
  for (int64_t L : {int64_t{1}, int64_t{120}}) {
    const InferenceOutcome dense = run(request(L, 4, "dense"));
    for (const std::string algorithm : {"star", "ring"}) {
      SCOPED_TRACE(algorithm + " L=" + std::to_string(L));
      InferenceRequest r = request(L, 4, algorithm);
      r.attention.block_size = 200;
      const InferenceOutcome one_block = run(r);
      ASSERT_EQ(static_cast<int>(one_block.shard_tokens.size()), comm_.size());
      EXPECT_EQ(one_block.shard_tokens.back(), L);
      for (int rank = 0; rank + 1 < comm_.size(); ++rank) EXPECT_EQ(one_block.shard_tokens[rank], 0);
      if (comm_.rank() != 0) continue;
      EXPECT_EQ(one_block.generation.query_logits, dense.generation.query_logits);
      EXPECT_EQ(one_block.generation.tokens, dense.generation.tokens);
    }
  }
}

// boundary_overlap on two blocks: when the lead is all of block 0 that the prefix lacks, block 1's
// pass reads [B0 ‖ B1] at the global positions, so its KV, and every answer, is dense's. Without the
// overlap the same blocks are not dense (the test can tell).
TEST_F(EngineExactness, BoundaryOverlapOfAWholeBlockOnTwoBlocksEqualsDense) {
  const int64_t L = 120;
  const InferenceOutcome dense = run(request(L, 5, "dense"));
  for (const std::string algorithm : {"no-anchor", "star"}) {
    SCOPED_TRACE(algorithm);
    InferenceRequest r = request(L, 5, algorithm);
    r.attention.block_size = 60;
    r.attention.anchor_size = 1;
    const InferenceOutcome apart = run(r);
    r.attention.boundary_overlap = 60;
    const InferenceOutcome overlapped = run(r);
    ASSERT_EQ(overlapped.shard_tokens, apart.shard_tokens);  // the lead's KV is not kept
    if (comm_.rank() != 0) continue;
    EXPECT_LT(max_abs_diff(overlapped.generation.query_logits, dense.generation.query_logits), 1e-4f);
    EXPECT_EQ(overlapped.generation.tokens, dense.generation.tokens);
    EXPECT_GT(max_abs_diff(apart.generation.query_logits, dense.generation.query_logits), 1e-3f);
  }
}

// anchor_positions "adjacent" puts the anchor just before each block's pass. On three blocks of
// which block 1 repeats block 0 token for token, block i's pass then reads [B0 at the positions of
// B(i-1) ‖ Bi], which is no-anchor's pass with an overlap of a whole block: the same tokens at the
// same positions, so the same KV, logits and answer, bit for bit. With the paper's positions (the
// anchor at 0..b-1) block 2 differs (the test can tell).
TEST_F(EngineExactness, AdjacentAnchorOverARepeatedBlockEqualsNoAnchorWithAWholeBlockOverlap) {
  const int64_t b = 40;
  InferenceRequest adjacent = request(3 * b, 5, "star");
  std::copy_n(adjacent.context_ids.begin(), b, adjacent.context_ids.begin() + b);
  adjacent.attention.block_size = b;
  adjacent.attention.anchor_positions = "adjacent";
  InferenceRequest overlapped = adjacent;
  overlapped.attention.algorithm = "no-anchor";
  overlapped.attention.boundary_overlap = b;
  InferenceRequest first = adjacent;
  first.attention.anchor_positions = "first";
  const InferenceOutcome a = run(adjacent), o = run(overlapped), f = run(first);
  ASSERT_EQ(a.shard_tokens, o.shard_tokens);
  if (comm_.rank() != 0) return;
  EXPECT_EQ(a.generation.query_logits, o.generation.query_logits);
  EXPECT_EQ(a.generation.tokens, o.generation.tokens);
  EXPECT_GT(max_abs_diff(f.generation.query_logits, a.generation.query_logits), 1e-4f);
}

// A server configured for long documents answers short ones: block size 4096, contexts of 1 to
// 4,097 tokens, every blocked algorithm; up to 4,096 tokens (one block) star and ring answer as
// dense does, and ring stays exact past it.
TEST_F(EngineExactness, ContextsShorterThanTheRanksBlocksAreAnswered) {
  for (int64_t L : {int64_t{1}, int64_t{100}, int64_t{975}, int64_t{4097}}) {
    InferenceRequest dense_request = request(L, 2, "dense");
    dense_request.generation.max_tokens = 3;
    const InferenceOutcome dense = run(dense_request);
    for (const std::string algorithm : {"star", "ring", "no-anchor", "pulsar"}) {
      SCOPED_TRACE(algorithm + " L=" + std::to_string(L));
      InferenceRequest r = dense_request;
      r.attention.algorithm = algorithm;
      r.attention.block_size = 4096;
      Result<InferenceOutcome> out = run_inference(*model_, comm_, r);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      EXPECT_EQ(out->context_tokens, L);
      if (comm_.rank() != 0) continue;
      EXPECT_EQ(out->generation.tokens.size(), 3u);
      if (algorithm == "ring") {
        EXPECT_LT(max_abs_diff(out->generation.query_logits, dense.generation.query_logits), 1e-4f);
        EXPECT_EQ(out->generation.tokens, dense.generation.tokens);
      } else if (L <= 4096 && algorithm == "star") {
        EXPECT_EQ(out->generation.query_logits, dense.generation.query_logits);
        EXPECT_EQ(out->generation.tokens, dense.generation.tokens);
      }
    }
  }
}

// An empty context is no special case: every algorithm plans it (no blocks) and answers as dense.
TEST_F(EngineExactness, EmptyContextAnswersAsDense) {
  const InferenceOutcome dense = run(request(0, 5, "dense"));
  for (const std::string algorithm : {"star", "ring", "no-anchor", "pulsar", "streaming"}) {
    SCOPED_TRACE(algorithm);
    const InferenceOutcome out = run(request(0, 5, algorithm));
    EXPECT_EQ(out.algorithm, algorithm);
    if (comm_.rank() != 0) continue;
    EXPECT_EQ(out.generation.query_logits, dense.generation.query_logits);
    EXPECT_EQ(out.generation.tokens, dense.generation.tokens);
  }
}

// A one-token query has one logit row, as a decoding step does: its logits still come back whole
// (greedy rows otherwise send only their slices' candidates), and the greedy first token is their
// argmax.
TEST_F(EngineExactness, AOneTokenQueryReturnsItsLogits) {
  const InferenceOutcome out = run(request(37, 1, "star"));
  if (comm_.rank() != 0) return;
  const std::vector<float>& logits = out.generation.query_logits;
  ASSERT_EQ(static_cast<int64_t>(logits.size()), model_->llama->config().vocab_size);
  ASSERT_FALSE(out.generation.tokens.empty());
  EXPECT_EQ(out.generation.tokens[0], std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_F(EngineExactness, SameSeedSameSampleWhateverTheSplit) {
  InferenceRequest dense = request(90, 3, "dense");
  InferenceRequest ring = request(90, 3, "ring");
  for (auto* r : {&dense, &ring}) {
    r->generation.sampling = SamplingParams{.temperature = 0.9f, .top_k = 40, .top_p = 0.95f, .seed = 1234};
    r->generation.max_tokens = 16;
  }
  InferenceOutcome a = run(dense), b = run(ring);
  if (comm_.rank() == 0) EXPECT_EQ(a.generation.tokens, b.generation.tokens);
}

TEST_F(EngineExactness, ShardsHoldOnlyTheirOwnBlocksWithExactBytes) {
  const LlamaConfig& c = model_->llama->config();
  for (const std::string algorithm : {"star", "no-anchor", "ring"}) {
    SCOPED_TRACE(algorithm);
    InferenceRequest r = request(203, 2, algorithm);
    r.attention.block_size = 203 / (2 * comm_.size()) + 1;
    InferenceOutcome out = run(r);
    ASSERT_EQ(static_cast<int>(out.shard_tokens.size()), comm_.size());
    int64_t total = 0;
    for (int rank = 0; rank < comm_.size(); ++rank) {
      total += out.shard_tokens[rank];
      EXPECT_EQ(out.shard_bytes[rank],
                static_cast<size_t>(out.shard_tokens[rank] * c.n_layers * 2 * c.n_kv_heads * c.head_dim) * sizeof(float));
    }
    EXPECT_EQ(total, 203);
  }
}

// Phase 2's attention alone: each rank holds an arbitrary slice (possibly empty) of one KV set.
TEST_F(EngineExactness, MergeOfAnySplitEqualsAttentionOverTheWholeSet) {
  const AttentionShape shape{8, 2, 16};
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t total = trial == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 300);
    const int64_t nq = 1 + trial % 3;
    std::vector<float> k(total * shape.kv_floats()), v(k.size()), q(nq * shape.q_floats());
    for (auto* buf : {&k, &v, &q}) for (float& x : *buf) x = 3.f * normal(rng);
    // Uneven cut points, shared by every rank (same generator), some shards empty.
    std::vector<int64_t> cuts{0, total};
    for (int r = 1; r < comm_.size(); ++r) cuts.push_back(trial % 2 ? total : static_cast<int64_t>(rng() % (total + 1)));
    std::sort(cuts.begin(), cuts.end());
    const int64_t begin = cuts[comm_.rank()], end = cuts[comm_.rank() + 1];

    KvCache shard(1, shape.n_kv_heads, shape.head_dim);
    shard.store(0, shard.grow(end - begin), k.data() + begin * shape.kv_floats(), v.data() + begin * shape.kv_floats(),
                end - begin);
    ShardedQueryAttention attention(shape, comm_, shard, /*is_query_host=*/false);
    std::vector<float> merged(nq * shape.q_floats());
    ASSERT_TRUE(attention.begin(nq).ok());
    ASSERT_TRUE(attention.attend(0, q.data(), nullptr, nullptr, nq, merged.data()).ok());

    std::vector<float> whole(merged.size()), lse(nq * shape.n_heads);
    cpu::attention_forward(q.data(), nq, k.data(), v.data(), total, shape.n_heads, shape.n_kv_heads, shape.head_dim,
                           1.f / std::sqrt(16.f), AttentionMask{}, whole.data(), lse.data());
    // 1e-5 relative to the magnitude of each output (values here reach ~10).
    for (size_t i = 0; i < whole.size(); ++i) {
      ASSERT_NEAR(merged[i], whole[i], 1e-5f * std::max(1.f, std::abs(whole[i]))) << "trial " << trial << " at " << i;
    }
  }
}

TEST_F(EngineExactness, BadRequestsFailOnEveryRankWithoutHanging) {
  InferenceRequest empty_query = request(50, 0, "star");
  Result<InferenceOutcome> a = run_inference(*model_, comm_, empty_query);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("query"), std::string::npos);

  InferenceRequest too_long = request(10, 2, "star");
  too_long.context_ids.resize(model_->llama->config().max_position_embeddings, 5);
  Result<InferenceOutcome> b = run_inference(*model_, comm_, too_long);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("positions"), std::string::npos);

  // After all that, a good request still runs on every rank.
  run(request(40, 2, "star"));
}

}  // namespace
}  // namespace star
