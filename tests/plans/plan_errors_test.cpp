// Bad inputs: every one is INVALID_ARGUMENT with a message that names the field and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "star/attention/plan_builder.h"

namespace star {
namespace {

const std::vector<int32_t> kSevenTokens = {5, 6, 7, 8, 9, 10, 11};

AttentionConfig config_for(const std::string& algorithm, int64_t block_size = 0,
                           int64_t anchor_size = -1) {
  AttentionConfig config;
  config.algorithm = algorithm;
  config.block_size = block_size;
  config.anchor_size = anchor_size;
  return config;
}

void expect_invalid(const Result<BlockPlan>& plan, const std::vector<std::string>& words) {
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  for (const std::string& word : words) {
    EXPECT_NE(plan.status().message().find(word), std::string::npos)
        << "'" << word << "' missing from: " << plan.status().message();
  }
}

class EveryAlgorithm : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryAlgorithm, NegativeBlockSize) {
  expect_invalid(build_block_plan(kSevenTokens, 2, config_for(GetParam(), -3)),
                 {"block_size", "-3", ">= 0"});
}

TEST_P(EveryAlgorithm, NoRanks) {
  expect_invalid(build_block_plan(kSevenTokens, 0, config_for(GetParam())),
                 {"n_ranks", "0", ">= 1"});
  expect_invalid(build_block_plan(kSevenTokens, -2, config_for(GetParam())), {"n_ranks", "-2"});
}

INSTANTIATE_TEST_SUITE_P(Plans, EveryAlgorithm,
                         ::testing::Values("dense", "star", "no-anchor", "ring"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

TEST(StarPlanErrors, AnchorSizeMustBeMinusOneOrPositive) {
  expect_invalid(build_block_plan(kSevenTokens, 2, config_for("star", 0, 0)),
                 {"anchor_size", "got 0", "-1"});
  expect_invalid(build_block_plan(kSevenTokens, 2, config_for("star", 0, -2)),
                 {"anchor_size", "got -2"});
}

TEST(StarPlanErrors, AnchorPositionsMustBeFirstOrAdjacent) {
  AttentionConfig config = config_for("star");
  config.anchor_positions = "middle";
  expect_invalid(build_block_plan(kSevenTokens, 2, config), {"anchor_positions", "\"middle\"", "first, adjacent"});
}

TEST(StarPlanErrors, OtherAlgorithmsIgnoreAnchorSize) {
  EXPECT_TRUE(build_block_plan(kSevenTokens, 2, config_for("no-anchor", 0, 0)).ok());
}

TEST(BlockedPlanErrors, NegativeBoundaryOverlapIsNamed) {
  for (const char* algorithm : {"star", "no-anchor", "pulsar"}) {
    SCOPED_TRACE(algorithm);
    AttentionConfig config = config_for(algorithm);
    config.boundary_overlap = -5;
    expect_invalid(build_block_plan(kSevenTokens, 2, config), {"boundary_overlap", "-5"});
  }
}

TEST(PlanBuilderDispatch, UnknownAlgorithmNamesTheValueAndTheAllowedNames) {
  expect_invalid(build_block_plan(kSevenTokens, 1, config_for("pulsarr")),
                 {"algorithm", "'pulsarr'", "dense", "star", "no-anchor", "ring"});
  expect_invalid(build_block_plan(kSevenTokens, 1, config_for("")), {"algorithm", "''"});
}

TEST(PlanBuilderDispatch, ListsTheAlgorithmsItDispatches) {
  const std::vector<std::string_view> names = plan_algorithm_names();
  EXPECT_EQ(names, (std::vector<std::string_view>{"dense", "star", "no-anchor", "ring", "pulsar", "streaming"}));
  for (std::string_view name : names) {
    Result<BlockPlan> plan = build_block_plan(kSevenTokens, 1, config_for(std::string(name)));
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().to_string();
    EXPECT_EQ(plan->algorithm, name);
  }
}

TEST(PlanBuilderDispatch, DenseAllowsMoreRanksThanTokens) {
  Result<BlockPlan> plan = build_block_plan(kSevenTokens, 16, config_for("dense"));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->ranks.size(), 16u);
  EXPECT_EQ(plan->ranks[0].shard.size(), 7);
}

}  // namespace
}  // namespace star
