// The block rule every blocked plan shares: n = ceil(L/b) blocks, rank r holds
// [floor(r*n/H), floor((r+1)*n/H)), the query host holds the last block.
#include <gtest/gtest.h>

#include "star/attention/block_ranges.h"

namespace star {
namespace {

void expect_range(TokenRange got, int64_t begin, int64_t end) {
  EXPECT_EQ(got.begin, begin);
  EXPECT_EQ(got.end, end);
}

TEST(SplitIntoBlocks, ExplicitBlockSizeWithShortLastBlock) {
  const Result<BlockLayout> layout = split_into_blocks(10, 3, 2);
  ASSERT_TRUE(layout.ok());
  ASSERT_EQ(layout->blocks.size(), 4u);
  expect_range(layout->blocks[0], 0, 3);
  expect_range(layout->blocks[3], 9, 10);
  EXPECT_EQ(layout->rank_runs[0].first, 0);
  EXPECT_EQ(layout->rank_runs[0].last, 2);
  EXPECT_EQ(layout->rank_runs[1].first, 2);
  EXPECT_EQ(layout->rank_runs[1].last, 4);
  expect_range(layout->shard(0), 0, 6);
  expect_range(layout->shard(1), 6, 10);
  EXPECT_EQ(layout->query_host, 1);
}

TEST(SplitIntoBlocks, ZeroBlockSizeMeansOneBlockPerRank) {
  const Result<BlockLayout> layout = split_into_blocks(10, 0, 3);  // b = ceil(10/3) = 4
  ASSERT_TRUE(layout.ok());
  ASSERT_EQ(layout->blocks.size(), 3u);
  expect_range(layout->blocks[1], 4, 8);
  expect_range(layout->blocks[2], 8, 10);
  for (int r = 0; r < 3; ++r) expect_range(layout->shard(r), layout->blocks[r].begin, layout->blocks[r].end);
  EXPECT_EQ(layout->query_host, 2);
}

TEST(SplitIntoBlocks, FewerBlocksThanRanksLeavesEmptyShardsInOrder) {
  const Result<BlockLayout> layout = split_into_blocks(2, 1, 4);  // runs [0,0) [0,1) [1,1) [1,2)
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(layout->rank_runs[0].empty());
  EXPECT_TRUE(layout->rank_runs[2].empty());
  expect_range(layout->shard(0), 0, 0);
  expect_range(layout->shard(1), 0, 1);
  expect_range(layout->shard(2), 1, 1);
  expect_range(layout->shard(3), 1, 2);
  EXPECT_EQ(layout->query_host, 3);
}

TEST(SplitIntoBlocks, EmptyContextHasNoBlocksAndEmptyShardsEverywhere) {
  const Result<BlockLayout> layout = split_into_blocks(0, 4, 3);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_TRUE(layout->blocks.empty());
  ASSERT_EQ(layout->rank_runs.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(layout->rank_runs[r].empty());
    expect_range(layout->shard(r), 0, 0);
  }
  EXPECT_EQ(layout->query_host, 0);
}

TEST(SplitIntoBlocks, BadInputsNameTheProblem) {
  const Result<BlockLayout> negative_length = split_into_blocks(-1, 4, 2);
  ASSERT_FALSE(negative_length.ok());
  EXPECT_NE(negative_length.status().message().find("-1 tokens"), std::string::npos);
  const Result<BlockLayout> no_ranks = split_into_blocks(10, 4, 0);
  ASSERT_FALSE(no_ranks.ok());
  EXPECT_NE(no_ranks.status().message().find("n_ranks = 0"), std::string::npos);
  const Result<BlockLayout> negative = split_into_blocks(10, -2, 2);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("block_size = -2"), std::string::npos);
}

}  // namespace
}  // namespace star
