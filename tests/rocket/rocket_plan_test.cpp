// Which plans and parameters RocketKV refuses before any work, with the field named.
#include <gtest/gtest.h>

#include "star/engine/rocket_compaction.h"

namespace star {
namespace {

BlockPlan two_rank_plan() {
  BlockPlan plan;
  plan.algorithm = "star";
  plan.context_tokens = 100;
  plan.ranks.resize(2);
  plan.ranks[0].shard = {0, 50};
  plan.ranks[1].shard = {50, 100};
  plan.query_host = 1;
  return plan;
}

TEST(RocketPlan, AcceptsContiguousShardsWithTheDefaults) {
  EXPECT_TRUE(check_rocket_plan(two_rank_plan(), RocketConfig{}).ok());
}

TEST(RocketPlan, RefusesWindowedPlansAndKeptPrefixes) {
  BlockPlan streaming = two_rank_plan();
  streaming.algorithm = "streaming";
  streaming.window = {4, 64};
  EXPECT_NE(check_rocket_plan(streaming, RocketConfig{}).message().find("streaming"), std::string::npos);
  BlockPlan kept = two_rank_plan();
  kept.ranks[0].keep_prefix_kv = true;
  EXPECT_NE(check_rocket_plan(kept, RocketConfig{}).message().find("keep_prefix_kv"), std::string::npos);
}

TEST(RocketPlan, NamesTheBadField) {
  const auto message = [](auto set) {
    RocketConfig c;
    set(c);
    Status s = check_rocket_plan(two_rank_plan(), c);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    return s.message();
  };
  EXPECT_NE(message([](RocketConfig& c) { c.page_size = 6; }).find("sparse_attention.page_size: 6"), std::string::npos);
  EXPECT_NE(message([](RocketConfig& c) { c.topk = 0; }).find("sparse_attention.topk: 0"), std::string::npos);
  EXPECT_NE(message([](RocketConfig& c) { c.prompt_budget = 16; }).find("sparse_attention.prompt_budget: 16"),
            std::string::npos);
}

}  // namespace
}  // namespace star
