// Every plan builder against a restatement of docs/algorithms.md's plan table, over a grid of context
// lengths, rank counts, block sizes and anchor sizes: shards tile the context in rank order, each
// step's tokens and positions equal the ones computed here from the context, and the KV kept by a
// rank is exactly its shard. With boundary_overlap, each later block's pass starts with the previous
// block's tail (the tokens the prefix does not hold), whose KV is not kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "star/attention/plan_builder.h"

namespace star {
namespace {

using Kind = EncodeStep::Kind;

std::vector<int32_t> random_context(int64_t length) {
  std::mt19937 rng(static_cast<uint32_t>(length) * 2654435761u);
  std::uniform_int_distribution<int32_t> id(0, 128255);
  std::vector<int32_t> ids(static_cast<size_t>(length));
  for (int32_t& t : ids) t = id(rng);
  return ids;
}

// What one step must contain: the kind and, token by token, (context index, position).
struct ExpectedStep {
  Kind kind;
  std::vector<int64_t> context_index;
  std::vector<int32_t> position;
  int block_index;
  int64_t lead_tokens = 0;
};

ExpectedStep global_step(Kind kind, int64_t begin, int64_t end, int block_index) {
  ExpectedStep step{kind, {}, {}, block_index};
  for (int64_t t = begin; t < end; ++t) {
    step.context_index.push_back(t);
    step.position.push_back(static_cast<int32_t>(t));
  }
  return step;
}

// A grid case and its expected layout, derived from the plan table, not from the builders.
struct Case {
  std::string algorithm;
  int64_t length = 0;
  int ranks = 1;
  int64_t block_size = 0;
  int64_t anchor_size = -1;
  int64_t overlap = 0;

  int64_t block() const { return block_size == 0 ? (length + ranks - 1) / ranks : block_size; }
  int64_t n_blocks() const { return (length + block() - 1) / block(); }
  // Blocks of rank r: [r * n / H, (r + 1) * n / H).
  int64_t first_block(int r) const { return r * n_blocks() / ranks; }
  int64_t block_begin(int64_t i) const { return i * block(); }
  int64_t block_end(int64_t i) const { return std::min((i + 1) * block(), length); }
  int64_t anchor() const {
    return std::min(anchor_size == -1 ? block() : anchor_size, block_end(0));
  }

  std::string name() const {
    return algorithm + " L=" + std::to_string(length) + " H=" + std::to_string(ranks) +
           " b=" + std::to_string(block_size) + " a=" + std::to_string(anchor_size) + " o=" + std::to_string(overlap);
  }

  // The previous block's tokens block i's pass reads first: those within `overlap` of its start that
  // star's anchor does not already hold.
  std::vector<int64_t> lead(int64_t i) const {
    std::vector<int64_t> tokens;
    if (i == 0) return tokens;
    for (int64_t t = block_begin(i - 1); t < block_end(i - 1); ++t) {
      const bool in_anchor = algorithm == "star" && t < anchor();
      if (t >= block_begin(i) - overlap && !in_anchor) tokens.push_back(t);
    }
    return tokens;
  }

  std::vector<ExpectedStep> steps(int r) const {
    std::vector<ExpectedStep> out;
    if (algorithm == "dense") {
      if (r == 0) out.push_back(global_step(Kind::kEncodeBlock, 0, length, 0));
      return out;
    }
    const int64_t first = first_block(r);
    const int64_t end = first_block(r + 1);
    if (algorithm == "ring") {
      // A rank without blocks takes an empty segment where its run would start.
      if (first == end) {
        const int64_t at = first < n_blocks() ? block_begin(first) : length;
        out.push_back(global_step(Kind::kRingSegment, at, at, -1));
      } else {
        out.push_back(global_step(Kind::kRingSegment, block_begin(first), block_end(end - 1),
                                  static_cast<int>(first)));
      }
      return out;
    }
    for (int64_t i = first; i < end; ++i) {
      const bool needs_anchor = algorithm == "star" && i > 0;
      const bool anchor_done = std::any_of(out.begin(), out.end(), [](const ExpectedStep& s) {
        return s.kind == Kind::kExtendPrefix;
      });
      if (needs_anchor && !anchor_done) {
        ExpectedStep anchor_step{Kind::kExtendPrefix, {}, {}, -1};
        for (int64_t t = 0; t < anchor(); ++t) {
          anchor_step.context_index.push_back(t);
          anchor_step.position.push_back(static_cast<int32_t>(t));
        }
        out.push_back(anchor_step);
      }
      ExpectedStep block_step{Kind::kEncodeBlock, {}, {}, static_cast<int>(i)};
      const std::vector<int64_t> lead_tokens = lead(i);
      block_step.lead_tokens = static_cast<int64_t>(lead_tokens.size());
      std::vector<int64_t> indices = lead_tokens;
      for (int64_t t = block_begin(i); t < block_end(i); ++t) indices.push_back(t);
      for (int64_t t : indices) {
        block_step.context_index.push_back(t);
        block_step.position.push_back(static_cast<int32_t>(t));
      }
      out.push_back(block_step);
    }
    return out;
  }

  int64_t longest_pass() const {
    if (algorithm == "dense") return length;
    int64_t longest = 0;
    for (int r = 0; r < ranks; ++r) {
      for (int64_t i = first_block(r); i < first_block(r + 1); ++i) {
        const int64_t own = block_end(i) - block_begin(i);
        const int64_t prefix = algorithm == "star" && i > 0 ? anchor() : 0;
        longest = std::max(longest, prefix + static_cast<int64_t>(lead(i).size()) + own);
      }
      if (algorithm == "ring") {
        longest =
            std::max(longest, block_end(first_block(r + 1) - 1) - block_begin(first_block(r)));
      }
    }
    return longest;
  }
};

std::vector<Case> grid() {
  std::vector<Case> cases;
  for (const char* algorithm : {"dense", "star", "no-anchor", "ring"}) {
    for (int64_t length : {1, 7, 100, 1000}) {
      for (int ranks = 1; ranks <= 4; ++ranks) {
        for (int64_t block_size :
             {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{64}, length - 1, length, length + 5}) {
          if (block_size < 0) continue;
          std::vector<int64_t> anchors = {-1};
          std::vector<int64_t> overlaps = {0};
          if (std::string(algorithm) == "star") anchors = {-1, 1, 5, 10000};
          if (std::string(algorithm) == "star" || std::string(algorithm) == "no-anchor") overlaps = {0, 2, 70};
          for (int64_t anchor : anchors) {
            for (int64_t overlap : overlaps) cases.push_back({algorithm, length, ranks, block_size, anchor, overlap});
          }
        }
      }
    }
  }
  return cases;
}

void expect_layout(const Case& c, const std::vector<int32_t>& ids, const BlockPlan& plan) {
  SCOPED_TRACE(c.name());
  EXPECT_EQ(plan.algorithm, c.algorithm);
  EXPECT_EQ(plan.context_tokens, c.length);
  EXPECT_EQ(plan.query_position_start, c.length);
  ASSERT_EQ(plan.ranks.size(), static_cast<size_t>(c.ranks));

  // Blocks: contiguous, never padded.
  const int64_t n_blocks = c.algorithm == "dense" ? 1 : c.n_blocks();
  ASSERT_EQ(plan.blocks.size(), static_cast<size_t>(n_blocks));
  for (int64_t i = 0; i < n_blocks; ++i) {
    const TokenRange& block = plan.blocks[static_cast<size_t>(i)];
    EXPECT_EQ(block.begin, c.algorithm == "dense" ? 0 : c.block_begin(i)) << "block " << i;
    EXPECT_EQ(block.end, c.algorithm == "dense" ? c.length : c.block_end(i)) << "block " << i;
  }

  // Shards tile [0, L) in rank order; every token is in exactly one.
  std::vector<int> owners(static_cast<size_t>(c.length), 0);
  int64_t expected_begin = 0;
  for (int r = 0; r < c.ranks; ++r) {
    const TokenRange& shard = plan.ranks[static_cast<size_t>(r)].shard;
    EXPECT_EQ(shard.begin, expected_begin) << "rank " << r;
    EXPECT_LE(shard.begin, shard.end) << "rank " << r;
    for (int64_t t = shard.begin; t < shard.end && t < c.length; ++t) {
      ++owners[static_cast<size_t>(t)];
    }
    expected_begin = shard.end;
  }
  EXPECT_EQ(expected_begin, c.length);
  EXPECT_TRUE(std::all_of(owners.begin(), owners.end(), [](int n) { return n == 1; }));

  // The query host holds the last block.
  const TokenRange& host_shard = plan.ranks[static_cast<size_t>(plan.query_host)].shard;
  EXPECT_EQ(host_shard.end, c.length);
  EXPECT_LE(host_shard.begin, plan.blocks.back().begin);

  for (int r = 0; r < c.ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankPlan& rank = plan.ranks[static_cast<size_t>(r)];
    const std::vector<ExpectedStep> expected = c.steps(r);
    ASSERT_EQ(rank.steps.size(), expected.size());
    int prefix_steps = 0;
    std::vector<int32_t> kept_positions;
    for (size_t s = 0; s < expected.size(); ++s) {
      const EncodeStep& step = rank.steps[s];
      EXPECT_EQ(step.kind, expected[s].kind) << "step " << s;
      EXPECT_EQ(step.positions, expected[s].position) << "step " << s;
      std::vector<int32_t> expected_ids;
      for (int64_t t : expected[s].context_index) {
        expected_ids.push_back(ids[static_cast<size_t>(t)]);
      }
      EXPECT_EQ(step.token_ids, expected_ids) << "step " << s;
      if (step.kind != Kind::kExtendPrefix) {
        EXPECT_EQ(step.block_index, expected[s].block_index) << "step " << s;
      }
      EXPECT_EQ(step.lead_tokens, expected[s].lead_tokens) << "step " << s;
      if (step.kind == Kind::kExtendPrefix) {
        ++prefix_steps;
      } else {
        kept_positions.insert(kept_positions.end(), step.positions.begin() + step.lead_tokens, step.positions.end());
      }
    }
    EXPECT_LE(prefix_steps, 1);
    // The KV a rank keeps (non-prefix steps) is exactly its shard, in order.
    std::vector<int32_t> shard_positions;
    for (int64_t t = rank.shard.begin; t < rank.shard.end; ++t) {
      shard_positions.push_back(static_cast<int32_t>(t));
    }
    EXPECT_EQ(kept_positions, shard_positions);
  }
  EXPECT_EQ(plan.longest_pass_tokens(), c.longest_pass());
}

TEST(PlanLayout, EveryAlgorithmMatchesThePlanTableOverTheGrid) {
  int cases_with_idle_ranks = 0;
  int cases_with_lead_tokens = 0;
  for (const Case& c : grid()) {
    const std::vector<int32_t> ids = random_context(c.length);
    AttentionConfig config;
    config.algorithm = c.algorithm;
    config.block_size = c.block_size;
    config.anchor_size = c.anchor_size;
    config.boundary_overlap = c.overlap;
    Result<BlockPlan> plan = build_block_plan(ids, c.ranks, config);
    ASSERT_TRUE(plan.ok()) << c.name() << ": " << plan.status().to_string();
    expect_layout(c, ids, *plan);
    if (c.algorithm != "dense" && c.n_blocks() < c.ranks) ++cases_with_idle_ranks;
    for (int64_t i = 1; c.algorithm != "dense" && c.algorithm != "ring" && i < c.n_blocks(); ++i) {
      if (!c.lead(i).empty()) {
        ++cases_with_lead_tokens;
        break;
      }
    }
  }
  // Fewer blocks than ranks is planned, not refused: the grid must reach it often.
  EXPECT_GT(cases_with_idle_ranks, 100);
  EXPECT_GT(cases_with_lead_tokens, 100);
}

TEST(PlanLayout, StarWithOneBlockEqualsDense) {
  const std::vector<int32_t> ids = random_context(100);
  AttentionConfig star_config;
  star_config.algorithm = "star";
  star_config.block_size = 100;
  AttentionConfig dense_config;
  dense_config.algorithm = "dense";
  Result<BlockPlan> star = build_block_plan(ids, 1, star_config);
  Result<BlockPlan> dense = build_block_plan(ids, 1, dense_config);
  ASSERT_TRUE(star.ok() && dense.ok());
  ASSERT_EQ(star->ranks[0].steps.size(), 1u);
  ASSERT_EQ(dense->ranks[0].steps.size(), 1u);
  EXPECT_EQ(star->ranks[0].steps[0].kind, dense->ranks[0].steps[0].kind);
  EXPECT_EQ(star->ranks[0].steps[0].token_ids, dense->ranks[0].steps[0].token_ids);
  EXPECT_EQ(star->ranks[0].steps[0].positions, dense->ranks[0].steps[0].positions);
}

TEST(PlanLayout, StarRankWithBlockZeroEncodesItBeforeTheAnchor) {
  // L = 10, b = 3, one rank: B0 = [0, 3), then anchor [0, 2) once, then B1..B3.
  const std::vector<int32_t> ids = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  AttentionConfig config;
  config.algorithm = "star";
  config.block_size = 3;
  config.anchor_size = 2;
  Result<BlockPlan> plan = build_block_plan(ids, 1, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const std::vector<EncodeStep>& steps = plan->ranks[0].steps;
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].kind, Kind::kEncodeBlock);
  EXPECT_EQ(steps[0].token_ids, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(steps[1].kind, Kind::kExtendPrefix);
  EXPECT_EQ(steps[1].token_ids, (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(steps[4].token_ids, (std::vector<int32_t>{19}));
  EXPECT_EQ(steps[4].positions, (std::vector<int32_t>{9}));
  // Longest pass: anchor (2) + a full block (3).
  EXPECT_EQ(plan->longest_pass_tokens(), 5);
}

// L = 12 tokens (ids 10-21), star with b = 4, anchor 2 and overlap 3.
const std::vector<int32_t> kTwelveIds = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
AttentionConfig star_b4_anchor2_overlap3() {
  AttentionConfig config;
  config.algorithm = "star";
  config.block_size = 4;
  config.anchor_size = 2;
  config.boundary_overlap = 3;
  return config;
}

TEST(PlanLayout, BoundaryOverlapPutsThePreviousTailBetweenAnchorAndBlock) {
  // One rank: B1 reads [2, 4) (tokens 0-1 are the anchor), B2 [5, 8).
  Result<BlockPlan> plan = build_block_plan(kTwelveIds, 1, star_b4_anchor2_overlap3());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const std::vector<EncodeStep>& steps = plan->ranks[0].steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].lead_tokens, 0);
  EXPECT_EQ(steps[1].kind, Kind::kExtendPrefix);
  EXPECT_EQ(steps[2].token_ids, (std::vector<int32_t>{12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(steps[2].lead_tokens, 2);
  EXPECT_EQ(steps[3].token_ids, (std::vector<int32_t>{15, 16, 17, 18, 19, 20, 21}));
  EXPECT_EQ(steps[3].lead_tokens, 3);
  // Longest pass: anchor (2) + lead (3) + block (4).
  EXPECT_EQ(plan->longest_pass_tokens(), 9);
}

TEST(PlanLayout, AdjacentAnchorLeadsEachPassAtThePositionsJustBeforeIt) {
  // The same as above with anchor_positions "adjacent": no prefix step; B1's pass is [anchor at 0-1 ‖
  // lead 12, 13 ‖ B1], B2's [anchor at 3-4 ‖ lead 15-17 at 5-7 ‖ B2]: the anchor ends where the lead
  // starts, and only the block's KV is kept.
  AttentionConfig config = star_b4_anchor2_overlap3();
  config.anchor_positions = "adjacent";
  Result<BlockPlan> plan = build_block_plan(kTwelveIds, 1, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const std::vector<EncodeStep>& steps = plan->ranks[0].steps;
  ASSERT_EQ(steps.size(), 3u);
  for (const EncodeStep& step : steps) EXPECT_EQ(step.kind, Kind::kEncodeBlock);
  EXPECT_EQ(steps[0].token_ids, (std::vector<int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(steps[0].lead_tokens, 0);
  EXPECT_EQ(steps[1].token_ids, (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(steps[1].lead_tokens, 4);
  EXPECT_EQ(steps[2].token_ids, (std::vector<int32_t>{10, 11, 15, 16, 17, 18, 19, 20, 21}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(steps[2].lead_tokens, 5);
  EXPECT_EQ(plan->ranks[0].shard, (TokenRange{0, 12}));
  EXPECT_EQ(plan->longest_pass_tokens(), 9);  // the same passes as the paper's positions
  // Without an overlap the anchor sits right before the block: B2 at 8, its anchor at 6-7.
  config.boundary_overlap = 0;
  plan = build_block_plan(kTwelveIds, 1, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->ranks[0].steps[2].positions, (std::vector<int32_t>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(plan->ranks[0].steps[2].lead_tokens, 2);
}

TEST(PlanLayout, PulsarBoundaryOverlapReadsThePreviousTailAtItsPositions) {
  const std::vector<int32_t> ids = random_context(256);
  for (const char* mode : {"sparse", "contiguous"}) {
    SCOPED_TRACE(mode);
    AttentionConfig config;
    config.algorithm = "pulsar";
    config.block_size = 64;
    config.position_mode = mode;
    AttentionConfig overlapped = config;
    overlapped.boundary_overlap = 10;
    Result<BlockPlan> plain = build_block_plan(ids, 2, config);
    Result<BlockPlan> plan = build_block_plan(ids, 2, overlapped);
    ASSERT_TRUE(plain.ok() && plan.ok()) << plan.status().to_string();
    for (size_t r = 0; r < plan->ranks.size(); ++r) {
      const std::vector<EncodeStep>& with = plan->ranks[r].steps;
      const std::vector<EncodeStep>& without = plain->ranks[r].steps;
      ASSERT_EQ(with.size(), without.size());
      for (size_t s = 0; s < with.size(); ++s) {
        const EncodeStep& step = with[s];
        if (step.kind == Kind::kExtendPrefix || step.block_index == 0) {
          EXPECT_EQ(step.token_ids, without[s].token_ids);
          EXPECT_EQ(step.lead_tokens, 0);
          continue;
        }
        // The block's own tokens are unchanged; in front of them, the previous block's last 10.
        ASSERT_EQ(step.lead_tokens, 10);
        const int64_t begin = plan->blocks[static_cast<size_t>(step.block_index)].begin;
        const std::vector<int32_t> lead(step.token_ids.begin(), step.token_ids.begin() + 10);
        EXPECT_EQ(lead, std::vector<int32_t>(ids.begin() + begin - 10, ids.begin() + begin));
        EXPECT_EQ(std::vector<int32_t>(step.token_ids.begin() + 10, step.token_ids.end()), without[s].token_ids);
        if (std::string(mode) == "sparse") {
          EXPECT_EQ(step.positions.front(), begin - 10);
          EXPECT_EQ(std::vector<int32_t>(step.positions.begin() + 10, step.positions.end()), without[s].positions);
        } else {
          EXPECT_EQ(step.positions[10], without[s].positions.front() + 10);
        }
      }
    }
    EXPECT_EQ(plan->longest_pass_tokens(), plain->longest_pass_tokens() + 10);
  }
}

TEST(PlanLayout, DenseAcceptsAnEmptyContextAndManyRanks) {
  AttentionConfig config;
  config.algorithm = "dense";
  Result<BlockPlan> plan = build_block_plan({}, 3, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(plan->blocks.empty());
  EXPECT_EQ(plan->query_host, 0);
  EXPECT_EQ(plan->query_position_start, 0);
  for (const RankPlan& rank : plan->ranks) {
    EXPECT_TRUE(rank.steps.empty());
    EXPECT_EQ(rank.shard.size(), 0);
  }
  EXPECT_EQ(plan->longest_pass_tokens(), 0);
}

// Fewer blocks than ranks: the one block sits on the query host, the other ranks hold empty shards
// and run nothing (star, no-anchor) or an empty ring segment (ring); star is then dense's pass.
TEST(PlanLayout, OneBlockOnAnyRankCountIsDensesPass) {
  for (int64_t length : {1, 100, 975, 4096}) {
    const std::vector<int32_t> ids = random_context(length);
    AttentionConfig dense_config;
    dense_config.algorithm = "dense";
    Result<BlockPlan> dense = build_block_plan(ids, 1, dense_config);
    ASSERT_TRUE(dense.ok());
    const EncodeStep& dense_pass = dense->ranks[0].steps.at(0);
    for (const char* algorithm : {"star", "no-anchor", "ring", "pulsar"}) {
      for (int ranks = 1; ranks <= 4; ++ranks) {
        SCOPED_TRACE(std::string(algorithm) + " L=" + std::to_string(length) +
                     " H=" + std::to_string(ranks));
        AttentionConfig config;
        config.algorithm = algorithm;
        config.block_size = 4096;
        Result<BlockPlan> plan = build_block_plan(ids, ranks, config);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        ASSERT_EQ(plan->blocks.size(), 1u);
        EXPECT_EQ(plan->query_host, ranks - 1);
        for (int r = 0; r < ranks; ++r) {
          const RankPlan& rank = plan->ranks[static_cast<size_t>(r)];
          if (r == plan->query_host) {
            EXPECT_EQ(rank.shard.begin, 0);
            EXPECT_EQ(rank.shard.end, length);
            ASSERT_EQ(rank.steps.size(), 1u);
            EXPECT_EQ(rank.steps[0].token_ids, dense_pass.token_ids);
            EXPECT_EQ(rank.steps[0].positions, dense_pass.positions);
            continue;
          }
          EXPECT_EQ(rank.shard.size(), 0) << "rank " << r;
          if (std::string(algorithm) == "ring") {
            ASSERT_EQ(rank.steps.size(), 1u) << "rank " << r;
            EXPECT_TRUE(rank.steps[0].token_ids.empty()) << "rank " << r;
          } else {
            EXPECT_TRUE(rank.steps.empty()) << "rank " << r;
          }
        }
        EXPECT_EQ(plan->longest_pass_tokens(), length);
      }
    }
  }
}

TEST(PlanLayout, EveryAlgorithmAcceptsAnEmptyContext) {
  for (std::string_view name : plan_algorithm_names()) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      SCOPED_TRACE(std::string(name) + " H=" + std::to_string(ranks));
      AttentionConfig config;
      config.algorithm = std::string(name);
      config.block_size = 4096;
      Result<BlockPlan> plan = build_block_plan({}, ranks, config);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_TRUE(plan->blocks.empty());
      EXPECT_EQ(plan->query_host, 0);
      EXPECT_EQ(plan->query_position_start, 0);
      ASSERT_EQ(plan->ranks.size(), static_cast<size_t>(ranks));
      for (const RankPlan& rank : plan->ranks) {
        EXPECT_TRUE(rank.steps.empty());
        EXPECT_EQ(rank.shard.begin, 0);
        EXPECT_EQ(rank.shard.end, 0);
      }
    }
  }
}

}  // namespace
}  // namespace star
