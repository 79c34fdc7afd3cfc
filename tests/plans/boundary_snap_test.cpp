// boundary_snap: block edges move back onto the end of a sentence or a line. Small layouts worked by
// hand, then a grid checked against the rule stated the other way round (an edge lands on the
// latest sentence end in reach, else stays), for every algorithm that reads it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "star/attention/plan_builder.h"

namespace star {
namespace {

using Kind = EncodeStep::Kind;

constexpr int32_t kFullStop = 7;  // the one id the tables below say ends a sentence

std::vector<uint8_t> full_stop_ends() {
  std::vector<uint8_t> ends(16, 0);
  ends[kFullStop] = 1;
  return ends;
}

AttentionConfig snapping(const std::string& algorithm, int64_t block_size, int64_t snap) {
  AttentionConfig config;
  config.algorithm = algorithm;
  config.block_size = block_size;
  config.boundary_snap = snap;
  return config;
}

TEST(BoundarySnap, StarEdgesMoveBackOntoTheLastSentenceEndInReach) {
  // L = 24, b = 8: edges at 8 and 16. Tokens 5 and 13 end sentences. The anchor (all of B0) is read
  // whole in front of B1, so edge 8 cuts nothing and stays; edge 16 lands at 14.
  std::vector<int32_t> ids(24, 1);
  ids[5] = kFullStop;
  ids[13] = kFullStop;
  const std::vector<uint8_t> ends = full_stop_ends();
  Result<BlockPlan> plan = build_block_plan(ids, 1, snapping("star", 8, 4), ends);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->blocks, (std::vector<TokenRange>{{0, 8}, {8, 14}, {14, 24}}));
  const std::vector<EncodeStep>& steps = plan->ranks[0].steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[1].kind, Kind::kExtendPrefix);
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(steps[3].positions.front(), 14);

  // A 4-token anchor does not reach the end of B0, so edge 8 is a cut and moves to 6 as well; the
  // anchor stays the first 4 tokens, and every block's pass holds its own tokens.
  AttentionConfig short_anchor = snapping("star", 8, 4);
  short_anchor.anchor_size = 4;
  Result<BlockPlan> cut = build_block_plan(ids, 1, short_anchor, ends);
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(cut->blocks, (std::vector<TokenRange>{{0, 6}, {6, 14}, {14, 24}}));
  const std::vector<EncodeStep>& cut_steps = cut->ranks[0].steps;
  ASSERT_EQ(cut_steps.size(), 4u);
  EXPECT_EQ(cut_steps[0].positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(cut_steps[1].positions, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(cut_steps[2].positions.front(), 6);
  EXPECT_EQ(cut_steps[2].positions.back(), 13);
}

TEST(BoundarySnap, AnAdjacentAnchorEndsOnASentenceEndInFrontOfABlockItDoesNotContinue) {
  // The layout above with anchor_positions "adjacent": B1's pass continues the anchor (all of B0,
  // positions 0-7), so it reads it whole; B2's pass reads it only up to token 5's sentence end,
  // [0, 6) at positions 8-13, just before B2 at 14. Without the snap B2 reads all of B0 (6-13).
  std::vector<int32_t> ids(24, 1);
  ids[5] = kFullStop;
  ids[13] = kFullStop;
  const std::vector<uint8_t> ends = full_stop_ends();
  AttentionConfig config = snapping("star", 8, 4);
  config.anchor_positions = "adjacent";
  Result<BlockPlan> plan = build_block_plan(ids, 1, config, ends);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->blocks, (std::vector<TokenRange>{{0, 8}, {8, 14}, {14, 24}}));
  const std::vector<EncodeStep>& steps = plan->ranks[0].steps;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].lead_tokens, 8);
  EXPECT_EQ(steps[1].positions.front(), 0);
  EXPECT_EQ(steps[1].positions.back(), 13);
  EXPECT_EQ(steps[2].lead_tokens, 6);
  EXPECT_EQ(std::vector<int32_t>(steps[2].token_ids.begin(), steps[2].token_ids.begin() + 6),
            std::vector<int32_t>(ids.begin(), ids.begin() + 6));
  EXPECT_EQ(std::vector<int32_t>(steps[2].positions.begin(), steps[2].positions.begin() + 7),
            (std::vector<int32_t>{8, 9, 10, 11, 12, 13, 14}));
  config.boundary_snap = 0;
  plan = build_block_plan(ids, 1, config, ends);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->ranks[0].steps[2].lead_tokens, 8);
  EXPECT_EQ(plan->ranks[0].steps[2].positions.front(), 8);
}

TEST(BoundarySnap, AnEdgeWithNoSentenceEndInReachStays) {
  // Token 2 ends a sentence, 6 tokens before edge 8: out of reach of a 4-token snap, in reach of 6.
  std::vector<int32_t> ids(16, 1);
  ids[1] = kFullStop;
  const std::vector<uint8_t> ends = full_stop_ends();
  Result<BlockPlan> near = build_block_plan(ids, 2, snapping("no-anchor", 8, 4), ends);
  Result<BlockPlan> far = build_block_plan(ids, 2, snapping("no-anchor", 8, 6), ends);
  ASSERT_TRUE(near.ok() && far.ok());
  EXPECT_EQ(near->blocks, (std::vector<TokenRange>{{0, 8}, {8, 16}}));
  EXPECT_EQ(far->blocks, (std::vector<TokenRange>{{0, 2}, {2, 16}}));
  // The shards follow the blocks: rank 1 now holds [2, 16).
  EXPECT_EQ(far->ranks[0].shard, (TokenRange{0, 2}));
  EXPECT_EQ(far->ranks[1].shard, (TokenRange{2, 16}));
}

TEST(BoundarySnap, NoBlockEmpties) {
  // b = 2 and only token 0 ends a sentence: edge 2 may move to 1, edge 4 may not pass it.
  std::vector<int32_t> ids(6, 1);
  ids[0] = kFullStop;
  const std::vector<uint8_t> ends = full_stop_ends();
  Result<BlockPlan> plan = build_block_plan(ids, 3, snapping("no-anchor", 2, 100), ends);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->blocks, (std::vector<TokenRange>{{0, 1}, {1, 4}, {4, 6}}));
}

// The rule from the other side: a snapped edge e' of edge e is e itself when no token in reach ends a
// sentence, else a sentence end (token e'-1) with no later one before e; and blocks tile the context.
// Star with its default anchor (all of B0) keeps the first edge, which its pass of B1 does not cut.
TEST(BoundarySnap, EveryReadingAlgorithmLandsOnTheLatestSentenceEndOverAGrid) {
  std::mt19937 rng(5);
  std::vector<int32_t> ids(500);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 16);  // 1 in 16 ends a sentence
  const std::vector<uint8_t> ends = full_stop_ends();
  struct Reader {
    const char* algorithm;
    int64_t anchor_size;
    bool keeps_first_edge;
  };
  for (const Reader& reader : {Reader{"star", -1, true}, Reader{"star", 8, false}, Reader{"no-anchor", -1, false},
                               Reader{"pulsar", -1, false}}) {
    for (int64_t block : {int64_t{37}, int64_t{64}, int64_t{125}}) {
      for (int64_t snap : {int64_t{1}, int64_t{8}, int64_t{40}}) {
        SCOPED_TRACE(std::string(reader.algorithm) + " anchor=" + std::to_string(reader.anchor_size) +
                     " b=" + std::to_string(block) + " snap=" + std::to_string(snap));
        AttentionConfig config = snapping(reader.algorithm, block, snap);
        config.anchor_size = reader.anchor_size;
        Result<BlockPlan> plan = build_block_plan(ids, 2, config, ends);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        const std::vector<TokenRange>& blocks = plan->blocks;
        ASSERT_EQ(blocks.size(), static_cast<size_t>((500 + block - 1) / block));
        EXPECT_EQ(blocks.front().begin, 0);
        EXPECT_EQ(blocks.back().end, 500);
        for (size_t i = 1; i < blocks.size(); ++i) {
          const int64_t edge = static_cast<int64_t>(i) * block;
          const int64_t at = blocks[i].begin;
          ASSERT_EQ(blocks[i - 1].end, at);
          ASSERT_GT(at, blocks[i - 1].begin);
          ASSERT_LE(at, edge);
          ASSERT_GE(at, edge - snap);
          if (reader.keeps_first_edge && i == 1) {
            EXPECT_EQ(at, edge);
            continue;
          }
          int64_t latest = -1;
          for (int64_t t = edge - 1; t >= std::max(edge - snap - 1, blocks[i - 1].begin); --t) {
            if (ids[static_cast<size_t>(t)] == kFullStop) {
              latest = t + 1;
              break;
            }
          }
          EXPECT_EQ(at, latest > blocks[i - 1].begin ? latest : edge);
        }
      }
    }
  }
}

// Pulsar's summary budget is a fraction of the block size: an edge that moves back a few tokens must
// not cost a chunk (at b = 256, 12.5% is 32 tokens, one chunk: B0's 250 tokens would give none).
TEST(BoundarySnap, PulsarKeepsItsSummaryBudget) {
  std::vector<int32_t> ids(1024, 1);
  for (size_t i = 9; i < ids.size(); i += 10) ids[i] = kFullStop;  // a sentence every 10 tokens
  const std::vector<uint8_t> ends = full_stop_ends();
  Result<BlockPlan> plain = build_block_plan(ids, 2, snapping("pulsar", 256, 0), ends);
  Result<BlockPlan> snapped = build_block_plan(ids, 2, snapping("pulsar", 256, 8), ends);
  ASSERT_TRUE(plain.ok() && snapped.ok()) << snapped.status().to_string();
  ASSERT_EQ(snapped->blocks[1].begin, 250);
  const auto prefix_tokens = [](const BlockPlan& plan, int rank) {
    size_t tokens = 0;
    for (const EncodeStep& step : plan.ranks[static_cast<size_t>(rank)].steps) {
      if (step.kind == Kind::kExtendPrefix) tokens += step.token_ids.size();
    }
    return tokens;
  };
  // Rank 1 reads the sink (64) and one 32-token chunk of each of B0 and B1 before B2, and one of B2
  // before B3: with the budget kept, as many prefix tokens as without the snap.
  EXPECT_EQ(prefix_tokens(*plain, 1), 64u + 3 * 32u);
  EXPECT_EQ(prefix_tokens(*snapped, 1), prefix_tokens(*plain, 1));
}

TEST(BoundarySnap, OffLeavesTheBlocksAsTheyWere) {
  std::vector<int32_t> ids(24, kFullStop);
  Result<BlockPlan> off = build_block_plan(ids, 2, snapping("star", 7, 0), full_stop_ends());
  Result<BlockPlan> plain = build_block_plan(ids, 2, snapping("star", 7, 0));
  ASSERT_TRUE(off.ok() && plain.ok());
  EXPECT_EQ(off->blocks, (std::vector<TokenRange>{{0, 7}, {7, 14}, {14, 21}, {21, 24}}));
  EXPECT_EQ(plain->blocks, off->blocks);
}

TEST(BoundarySnap, ACallerWithoutATokenizerIsToldSo) {
  const std::vector<int32_t> ids(24, 1);
  for (const char* algorithm : {"star", "no-anchor", "pulsar"}) {
    SCOPED_TRACE(algorithm);
    Result<BlockPlan> plan = build_block_plan(ids, 2, snapping(algorithm, 8, 4));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(plan.status().message().find("boundary_snap = 4"), std::string::npos) << plan.status().message();
    EXPECT_NE(plan.status().message().find("tokenizer"), std::string::npos) << plan.status().message();
  }
}

TEST(BoundarySnap, ANegativeSnapIsRefused) {
  const std::vector<int32_t> ids(24, 1);
  const std::vector<uint8_t> ends = full_stop_ends();
  for (const char* algorithm : {"star", "no-anchor", "pulsar"}) {
    Result<BlockPlan> plan = build_block_plan(ids, 2, snapping(algorithm, 8, -3), ends);
    ASSERT_FALSE(plan.ok()) << algorithm;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find("boundary_snap"), std::string::npos) << plan.status().message();
    EXPECT_NE(plan.status().message().find("-3"), std::string::npos) << plan.status().message();
  }
}

}  // namespace
}  // namespace star
