// StepWatch and StepWatchdog (--step-timeout): a step is overdue only while it runs and only past
// the timeout; the watchdog calls back once for a step that never ends, never for steps that end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "star/server/step_watch.h"

namespace star::server {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = StepWatch::Clock;

TEST(StepWatch, OverdueOnlyWhileAStepRunsPastTheTimeout) {
  StepWatch watch;
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(watch.overdue(start + 1h, 1s), std::nullopt) << "no step has begun";
  watch.begin(7, 3);
  const Clock::time_point began = Clock::now();
  EXPECT_EQ(watch.overdue(began, 1s), std::nullopt);
  EXPECT_EQ(watch.overdue(start + 1s, 1s), std::nullopt) << "just under the timeout";
  const std::optional<std::string> late = watch.overdue(began + 2500ms, 1s);
  ASSERT_TRUE(late.has_value());
  EXPECT_THAT(*late, HasSubstr("engine step 7 (3 request(s) running) has run 2."));
  EXPECT_THAT(*late, HasSubstr("past --step-timeout 1.000 s"));
  watch.end();
  EXPECT_EQ(watch.overdue(began + 1h, 1s), std::nullopt) << "the step ended";
  watch.begin(8, 0);
  EXPECT_EQ(watch.overdue(Clock::now(), 1s), std::nullopt) << "a new step's age counts from its own start";
}

TEST(StepWatchdog, CallsBackOnceForAStepThatNeverEnds) {
  StepWatch watch;
  std::atomic<int> calls = 0;
  std::string why;
  Clock::time_point called;
  std::atomic<bool> written = false;
  watch.begin(1, 1);
  const Clock::time_point began = Clock::now();
  {
    StepWatchdog watchdog(watch, 20ms, [&](const std::string& w) {
      called = Clock::now();
      why = w;
      written = true;
      ++calls;
    });
    for (int i = 0; i < 2000 && !written; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(written) << "no callback within ~2 s for a 20 ms timeout";
    std::this_thread::sleep_for(100ms);  // the step is still overdue: no second call
  }
  EXPECT_GE(called - began, 20ms) << "called before the step was overdue";
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(why, HasSubstr("engine step 1 (1 request(s) running)"));
}

// Steps that each end in time, for five timeouts in all, then none running for more than two: a
// watchdog that timed itself, or the first step, instead of the step in progress would call.
TEST(StepWatchdog, StepsThatEndInTimeAreNotReported) {
  StepWatch watch;
  std::atomic<int> calls = 0;
  {
    StepWatchdog watchdog(watch, 200ms, [&](const std::string&) { ++calls; });
    const Clock::time_point start = Clock::now();
    for (int step = 1; Clock::now() - start < 1s; ++step) {
      watch.begin(step, 1);
      std::this_thread::sleep_for(5ms);
      watch.end();
    }
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(calls, 0);
}

TEST(StepWatchdog, StopsPromptlyWhenDestroyed) {
  StepWatch watch;
  const Clock::time_point start = Clock::now();
  { StepWatchdog watchdog(watch, 1h, [](const std::string&) {}); }
  EXPECT_LT(Clock::now() - start, 500ms) << "the destructor waited for the check period (1 s) instead of waking the thread";
}

}  // namespace
}  // namespace star::server
