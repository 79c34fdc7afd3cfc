#include "star/server/request_channel.h"

#include <gtest/gtest.h>

#include <thread>

namespace star::server {
namespace {

TEST(RequestChannel, ConsecutiveTextMergesIntoOneChunk) {
  RequestChannel c;
  c.push(Phase1Progress{1, 2, 4});
  c.push(GeneratedText{{5}, "he"});
  c.push(GeneratedText{{}, ""});
  c.push(GeneratedText{{6, 7}, "llo"});
  c.push(GenerateSummary{});
  std::vector<ChannelEvent> events = c.wait(std::chrono::milliseconds(0));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(std::get<Phase1Progress>(events[0]).context_blocks, 4);
  const auto& text = std::get<GeneratedText>(events[1]);
  EXPECT_EQ(text.token_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(text.text, "hello");
  EXPECT_TRUE(is_final(events[2]));
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
