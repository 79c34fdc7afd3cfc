// RocketKV's token budget split between its stages, against the table that
// tests/reference/rocket_token_budget.py prints from the reference code's formula.
#include <gtest/gtest.h>

#include <string>

#include "star/attention/rocket/token_budget.h"

namespace star::rocket {
namespace {

struct Split {
  int64_t prompt, new_tokens, budget, head_dim, window;
  int64_t prompt_budget, page_size, topk, topr;
};

// The script's rows; the comment is the reference's own chunk where the page had to differ.
constexpr Split kSplits[] = {
    {2048, 48, 256, 64, 32, 890, 2, 64, 34},
    {2048, 48, 512, 64, 32, 1283, 2, 128, 49},
    {4096, 48, 256, 64, 32, 1165, 2, 64, 27},          // reference chunk 3
    {8144, 48, 256, 64, 32, 1400, 2, 64, 22},          // reference chunk 3
    {100, 48, 256, 64, 32, 100, 1, 128, 64},           // a budget above the request keeps every token
    {100000, 512, 2048, 128, 32, 11909, 2, 512, 42},  // reference chunk 3
    {40, 0, 16, 64, 32, 33, 1, 8, 34},                 // prompt_budget raised above the window
};

TEST(RocketTokenBudget, SplitsAsTheReferenceCode) {
  for (const Split& s : kSplits) {
    SCOPED_TRACE(std::to_string(s.prompt) + " + " + std::to_string(s.new_tokens) + " tokens, budget " +
                 std::to_string(s.budget));
    RocketConfig config;
    config.token_budget = s.budget;
    config.window_size = s.window;
    config.kernel_size = 7;
    const RocketConfig out = config_for_request(config, s.prompt, s.new_tokens, s.head_dim);
    EXPECT_EQ(out.prompt_budget, s.prompt_budget);
    EXPECT_EQ(out.page_size, s.page_size);
    EXPECT_EQ(out.topk, s.topk);
    EXPECT_EQ(out.topr, s.topr);
    EXPECT_EQ(out.token_budget, s.budget);
    EXPECT_EQ(out.window_size, s.window);
    EXPECT_EQ(out.kernel_size, 7);
  }
}

TEST(RocketTokenBudget, NoBudgetLeavesTheKeysAsGiven) {
  RocketConfig config;
  config.prompt_budget = 300;
  config.topk = 9;
  config.topr = 17;
  config.page_size = 8;
  EXPECT_EQ(config_for_request(config, 5000, 100, 64), config);
}

}  // namespace
}  // namespace star::rocket
