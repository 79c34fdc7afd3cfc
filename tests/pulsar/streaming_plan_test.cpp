#include <gtest/gtest.h>

#include "star/attention/streaming_plan.h"

namespace star {
namespace {

TEST(StreamingPlan, WholeContextOnRankZeroWithTheWindow) {
  const std::vector<int32_t> ids = {5, 9, 2, 7, 3};
  AttentionConfig config;
  config.algorithm = "streaming";
  config.streaming_sink = 2;
  config.streaming_window = 3;
  const Result<BlockPlan> plan = build_streaming_plan(ids, 3, config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->algorithm, "streaming");
  EXPECT_EQ(plan->window.sink, 2);
  EXPECT_EQ(plan->window.window, 3);
  EXPECT_EQ(plan->query_host, 0);
  EXPECT_EQ(plan->query_position_start, 5);
  ASSERT_EQ(plan->blocks.size(), 1u);
  EXPECT_EQ(plan->blocks[0].end, 5);
  ASSERT_EQ(plan->ranks.size(), 3u);
  ASSERT_EQ(plan->ranks[0].steps.size(), 1u);
  const EncodeStep& step = plan->ranks[0].steps[0];
  EXPECT_EQ(step.kind, EncodeStep::Kind::kEncodeBlock);
  EXPECT_EQ(step.token_ids, ids);
  EXPECT_EQ(step.positions, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(plan->ranks[0].shard.size(), 5);
  for (int r = 1; r < 3; ++r) {
    EXPECT_TRUE(plan->ranks[static_cast<size_t>(r)].steps.empty());
    EXPECT_EQ(plan->ranks[static_cast<size_t>(r)].shard.size(), 0);
  }
}

TEST(StreamingPlan, RejectsAnUnboundedWindow) {
  AttentionConfig config;
  config.algorithm = "streaming";
  config.streaming_window = 0;
  const std::vector<int32_t> ids = {1, 2};
  const Result<BlockPlan> plan = build_streaming_plan(ids, 1, config);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("streaming_window"), std::string::npos);
}

}  // namespace
}  // namespace star
