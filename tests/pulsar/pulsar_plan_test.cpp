// Pulsar Phase 1 plans: every pass checked token by token and position by position against inputs
// written out by hand from docs/algorithms.md's table, and prefix reuse checked against a direct assembly
// of [sink ‖ Σ0 ‖ … ‖ Σi-1 ‖ Bi] for random contexts.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "star/attention/pulsar_plan.h"
#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

using Indices = std::vector<int64_t>;
using Kind = EncodeStep::Kind;

Indices concat(std::initializer_list<Indices> parts) {
  Indices all;
  for (const Indices& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

Indices span_of(int64_t begin, int64_t end) {
  Indices v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// L = 40, blocks of 10, sink 4, chunks of 4, one chunk per summary. Tokens 1..5 repeat and occur in
// every block (IDF 0); each of blocks 0..2 holds one rare token, so max_idf picks its chunk:
//   block 0: rare at 9 (the sink [0, 4) holds rare 200 but is not scored) -> Σ0 = [8, 10), partial
//   block 1: rare at 15 -> Σ1 = [14, 18);  block 2: rare at 21 -> Σ2 = [20, 24)
class SmallPulsar : public ::testing::Test {
 protected:
  SmallPulsar() {
    ids.resize(40);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = 1 + static_cast<int32_t>(i % 5);
    ids[0] = 200;
    ids[9] = 100;
    ids[15] = 101;
    ids[21] = 102;
    config.algorithm = "pulsar";
    config.block_size = 10;
    config.sink_tokens = 4;
    config.chunk_tokens = 4;
    config.summary_chunks = 1;
  }

  const Indices sink = span_of(0, 4);
  const Indices sigma0 = span_of(8, 10);
  const Indices sigma1 = span_of(14, 18);
  const Indices sigma2 = span_of(20, 24);
  Indices block(int i) const { return span_of(10 * i, 10 * i + 10); }

  // The step must hold exactly these context tokens, at these positions.
  void expect_step(const EncodeStep& step, Kind kind, int block_index, const Indices& indices,
                   const std::vector<int32_t>& positions) const {
    EXPECT_EQ(step.kind, kind);
    EXPECT_EQ(step.block_index, block_index);
    std::vector<int32_t> tokens;
    for (int64_t i : indices) tokens.push_back(ids[static_cast<size_t>(i)]);
    EXPECT_EQ(step.token_ids, tokens);
    EXPECT_EQ(step.positions, positions);
  }
  static std::vector<int32_t> sparse(const Indices& indices) { return {indices.begin(), indices.end()}; }
  static std::vector<int32_t> counting(int32_t first, size_t n) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), first);
    return v;
  }

  std::vector<int32_t> ids;
  AttentionConfig config;
};

TEST_F(SmallPulsar, FourRanksSparse) {
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 4, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->algorithm, "pulsar");
  EXPECT_EQ(plan->context_tokens, 40);
  EXPECT_EQ(plan->query_host, 3);
  EXPECT_EQ(plan->query_position_start, 40);
  EXPECT_FALSE(plan->window.bounded());
  ASSERT_EQ(plan->blocks.size(), 4u);
  ASSERT_EQ(plan->ranks.size(), 4u);

  const auto& r0 = plan->ranks[0].steps;
  ASSERT_EQ(r0.size(), 1u);
  expect_step(r0[0], Kind::kEncodeBlock, 0, block(0), sparse(block(0)));

  const Indices prefix1 = concat({sink, sigma0});
  const Indices prefix2 = concat({sink, sigma0, sigma1});
  const Indices prefix3 = concat({sink, sigma0, sigma1, sigma2});
  const Indices* prefixes[] = {nullptr, &prefix1, &prefix2, &prefix3};
  for (int r = 1; r < 4; ++r) {
    const auto& steps = plan->ranks[static_cast<size_t>(r)].steps;
    ASSERT_EQ(steps.size(), 2u) << "rank " << r;
    expect_step(steps[0], Kind::kExtendPrefix, -1, *prefixes[r], sparse(*prefixes[r]));
    expect_step(steps[1], Kind::kEncodeBlock, r, block(r), sparse(block(r)));
  }
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(plan->ranks[static_cast<size_t>(r)].shard.begin, 10 * r);
    EXPECT_EQ(plan->ranks[static_cast<size_t>(r)].shard.end, 10 * r + 10);
    EXPECT_FALSE(plan->ranks[static_cast<size_t>(r)].keep_prefix_kv);
  }
}

TEST_F(SmallPulsar, TwoRanksReuseThePrefix) {
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 2, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->query_host, 1);

  // Rank 0: B0, then the prefix for block 1, then B1.
  const auto& r0 = plan->ranks[0].steps;
  ASSERT_EQ(r0.size(), 3u);
  expect_step(r0[0], Kind::kEncodeBlock, 0, block(0), sparse(block(0)));
  expect_step(r0[1], Kind::kExtendPrefix, -1, concat({sink, sigma0}), sparse(concat({sink, sigma0})));
  expect_step(r0[2], Kind::kEncodeBlock, 1, block(1), sparse(block(1)));

  // Rank 1: the whole prefix for block 2 once, then only Σ2 before block 3.
  const auto& r1 = plan->ranks[1].steps;
  ASSERT_EQ(r1.size(), 4u);
  const Indices prefix2 = concat({sink, sigma0, sigma1});
  expect_step(r1[0], Kind::kExtendPrefix, -1, prefix2, sparse(prefix2));
  expect_step(r1[1], Kind::kEncodeBlock, 2, block(2), sparse(block(2)));
  expect_step(r1[2], Kind::kExtendPrefix, -1, sigma2, sparse(sigma2));
  expect_step(r1[3], Kind::kEncodeBlock, 3, block(3), sparse(block(3)));

  EXPECT_EQ(plan->ranks[0].shard.begin, 0);
  EXPECT_EQ(plan->ranks[0].shard.end, 20);
  EXPECT_EQ(plan->ranks[1].shard.begin, 20);
  EXPECT_EQ(plan->ranks[1].shard.end, 40);
}

TEST_F(SmallPulsar, TwoRanksContiguous) {
  config.position_mode = "contiguous";
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 2, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // Longest pass: block 3 with sink 4 + Σ0 2 + Σ1 4 + Σ2 4 + 10 tokens.
  EXPECT_EQ(plan->query_position_start, 24);

  const auto& r0 = plan->ranks[0].steps;
  ASSERT_EQ(r0.size(), 3u);
  expect_step(r0[0], Kind::kEncodeBlock, 0, block(0), counting(0, 10));
  expect_step(r0[1], Kind::kExtendPrefix, -1, concat({sink, sigma0}), counting(0, 6));
  expect_step(r0[2], Kind::kEncodeBlock, 1, block(1), counting(6, 10));

  const auto& r1 = plan->ranks[1].steps;
  ASSERT_EQ(r1.size(), 4u);
  expect_step(r1[0], Kind::kExtendPrefix, -1, concat({sink, sigma0, sigma1}), counting(0, 10));
  expect_step(r1[1], Kind::kEncodeBlock, 2, block(2), counting(10, 10));
  expect_step(r1[2], Kind::kExtendPrefix, -1, sigma2, counting(10, 4));
  expect_step(r1[3], Kind::kEncodeBlock, 3, block(3), counting(14, 10));
}

TEST_F(SmallPulsar, FourRanksContiguous) {
  config.position_mode = "contiguous";
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 4, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->query_position_start, 24);
  const size_t prefix_lengths[] = {0, 6, 10, 14};
  for (int r = 1; r < 4; ++r) {
    const auto& steps = plan->ranks[static_cast<size_t>(r)].steps;
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].positions, counting(0, prefix_lengths[r]));
    EXPECT_EQ(steps[1].positions, counting(static_cast<int32_t>(prefix_lengths[r]), 10));
  }
}

TEST_F(SmallPulsar, KeepPrefixKvIsCopiedToEveryRank) {
  config.keep_prefix_kv = true;
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 3, config);
  ASSERT_TRUE(plan.ok());
  for (const RankPlan& rank : plan->ranks) EXPECT_TRUE(rank.keep_prefix_kv);
}

TEST_F(SmallPulsar, NoSinkAndNoSummaryLeavesNoPrefixStep) {
  config.sink_tokens = 0;
  config.summary_chunks = 0;
  config.summary_fraction = 0.0;
  const Result<BlockPlan> plan = build_pulsar_plan(ids, 2, config);
  ASSERT_TRUE(plan.ok());
  for (const RankPlan& rank : plan->ranks) {
    ASSERT_EQ(rank.steps.size(), 2u);
    for (const EncodeStep& step : rank.steps) EXPECT_EQ(step.kind, Kind::kEncodeBlock);
  }
}

TEST_F(SmallPulsar, RanksWithoutBlocks) {
  const std::vector<int32_t> short_ids(ids.begin(), ids.begin() + 20);  // two blocks, four ranks
  const Result<BlockPlan> plan = build_pulsar_plan(short_ids, 4, config);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->ranks[0].steps.empty());
  EXPECT_EQ(plan->ranks[1].steps.size(), 1u);
  EXPECT_TRUE(plan->ranks[2].steps.empty());
  EXPECT_EQ(plan->ranks[3].steps.size(), 2u);
  EXPECT_EQ(plan->query_host, 3);
}

TEST_F(SmallPulsar, InvalidInputsAreErrors) {
  config.scoring = "best";
  EXPECT_FALSE(build_pulsar_plan(ids, 2, config).ok());
  config.scoring = "max_idf";
  EXPECT_FALSE(build_pulsar_plan(ids, 0, config).ok());
}

// For random contexts and every scoring and position mode: the prefix steps a rank runs before
// block i, followed by block i's step, are exactly [sink ‖ Σ0 ‖ … ‖ Σi-1 ‖ Bi] (renumbered from 0 in
// contiguous mode), and block i's step is the rank's only kEncodeBlock for i.
TEST(PulsarPlan, PrefixStepsRebuildEveryBlockInput) {
  std::mt19937 rng(7);
  for (const char* scoring : {"max_idf", "tfidf", "bm25", "entropy", "even"}) {
    for (const char* mode : {"sparse", "contiguous"}) {
      for (const auto& [tokens, block_size, ranks] : {std::tuple{300, 37, 3}, std::tuple{256, 32, 4},
                                                      std::tuple{100, 0, 2}, std::tuple{95, 10, 1}}) {
        std::vector<int32_t> ids(static_cast<size_t>(tokens));
        for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 40);
        AttentionConfig config;
        config.algorithm = "pulsar";
        config.block_size = block_size;
        config.sink_tokens = 5;
        config.chunk_tokens = 3;
        config.summary_chunks = 2;
        config.scoring = scoring;
        config.position_mode = mode;
        const Result<BlockPlan> plan = build_pulsar_plan(ids, ranks, config);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        const bool contiguous = std::string(mode) == "contiguous";

        const auto& blocks = plan->blocks;
        const SummaryParams params{.scoring = *parse_summary_scoring(scoring), .chunk_tokens = 3,
                                   .budget_chunks = 2, .sink_tokens = 5};
        const auto summaries = select_summaries(ids, blocks, static_cast<int>(blocks.size()) - 1, params);

        int64_t longest = 0;
        int blocks_seen = 0;
        for (const RankPlan& rank : plan->ranks) {
          std::vector<int32_t> prefix_tokens, prefix_positions;
          for (const EncodeStep& step : rank.steps) {
            if (step.kind == Kind::kExtendPrefix) {
              prefix_tokens.insert(prefix_tokens.end(), step.token_ids.begin(), step.token_ids.end());
              prefix_positions.insert(prefix_positions.end(), step.positions.begin(), step.positions.end());
              continue;
            }
            ASSERT_EQ(step.kind, Kind::kEncodeBlock);
            const int i = step.block_index;
            Indices expected = i == 0 ? Indices{} : span_of(0, 5);
            for (int j = 0; j < i; ++j) expected.insert(expected.end(), summaries[j].begin(), summaries[j].end());
            const Indices own = span_of(blocks[i].begin, blocks[i].end);
            expected.insert(expected.end(), own.begin(), own.end());

            std::vector<int32_t> got_tokens = prefix_tokens, got_positions = prefix_positions;
            if (i == 0) got_tokens.clear(), got_positions.clear();
            got_tokens.insert(got_tokens.end(), step.token_ids.begin(), step.token_ids.end());
            got_positions.insert(got_positions.end(), step.positions.begin(), step.positions.end());
            std::vector<int32_t> want_tokens, want_positions;
            for (size_t t = 0; t < expected.size(); ++t) {
              want_tokens.push_back(ids[static_cast<size_t>(expected[t])]);
              want_positions.push_back(static_cast<int32_t>(contiguous ? static_cast<int64_t>(t) : expected[t]));
            }
            EXPECT_EQ(got_tokens, want_tokens) << scoring << " " << mode << " block " << i;
            EXPECT_EQ(got_positions, want_positions) << scoring << " " << mode << " block " << i;
            longest = std::max<int64_t>(longest, static_cast<int64_t>(expected.size()));
            ++blocks_seen;
          }
        }
        EXPECT_EQ(blocks_seen, static_cast<int>(blocks.size()));
        EXPECT_EQ(plan->query_position_start, contiguous ? longest : tokens);
      }
    }
  }
}

}  // namespace
}  // namespace star
