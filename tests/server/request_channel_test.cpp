#include "star/server/request_channel.h"

#include <gtest/gtest.h>

#include <thread>

namespace star::server {
namespace {

TEST(RequestChannel, ConsecutiveTokensMergeUntilTheAnswerEnds) {
  RequestChannel c;
  c.push(Phase1Progress{1, 2, 4});
  c.push(SampledTokens{{5}});
  c.push(SampledTokens{{6, 7}, /*ends_answer=*/true, /*ends_with_stop_id=*/true});
  c.push(SampledTokens{{8}});  // after the end: a chunk of its own, never merged into the ended answer
  c.push(GenerateSummary{});
  std::vector<ChannelEvent> events = c.wait(std::chrono::milliseconds(0));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(std::get<Phase1Progress>(events[0]).context_blocks, 4);
  const auto& merged = std::get<SampledTokens>(events[1]);
  EXPECT_EQ(merged.ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_TRUE(merged.ends_answer);
  EXPECT_TRUE(merged.ends_with_stop_id);
  EXPECT_EQ(std::get<SampledTokens>(events[2]).ids, (std::vector<int32_t>{8}));
  EXPECT_TRUE(is_final(events[3]));
  EXPECT_FALSE(is_final(events[1]));
  EXPECT_TRUE(c.wait(std::chrono::milliseconds(0)).empty()) << "events are taken once";
}

TEST(RequestChannel, WaitReturnsEmptyAfterTheTimeoutAndWakesOnPush) {
  RequestChannel c;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.wait(std::chrono::milliseconds(30)).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));

  std::thread engine([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c.push(Status(StatusCode::kInternal, "boom"));
  });
  const auto waited_from = std::chrono::steady_clock::now();
  std::vector<ChannelEvent> events = c.wait(std::chrono::seconds(10));
  engine.join();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(is_final(events[0]));
  EXPECT_LT(std::chrono::steady_clock::now() - waited_from, std::chrono::seconds(5));
}

TEST(RequestChannel, TheFirstCancelReasonWins) {
  RequestChannel c;
  EXPECT_FALSE(c.cancelled());
  EXPECT_TRUE(c.cancel(CancelReason::kAbort));
  EXPECT_FALSE(c.cancel(CancelReason::kClient));
  EXPECT_TRUE(c.cancelled());
  EXPECT_EQ(c.cancel_reason(), CancelReason::kAbort);
}

}  // namespace
}  // namespace star::server
