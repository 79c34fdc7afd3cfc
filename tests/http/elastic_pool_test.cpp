// The HTTP worker pool: a connection never waits for a busy worker to free up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

#include "star/http/elastic_pool.h"

namespace star::http {
namespace {

// Each job waits for the next one to have run: with a fixed pool of one worker the second job would
// never start and the first would wait forever (here: until the generous bound, then fail).
TEST(ElasticPool, AJobRunsWhileEveryWorkerIsBusy) {
  ElasticPool pool(1);
  constexpr int kJobs = 8;
  std::promise<void> ran[kJobs];
  std::shared_future<void> started[kJobs];
  for (int i = 0; i < kJobs; ++i) started[i] = ran[i].get_future().share();
  std::atomic<int> finished = 0;
  for (int i = 0; i < kJobs; ++i) {
    pool.enqueue([&, i] {
      ran[i].set_value();
      if (i + 1 < kJobs) {
        EXPECT_EQ(started[i + 1].wait_for(std::chrono::seconds(30)), std::future_status::ready) << i;
      }
      ++finished;
    });
  }
  pool.shutdown();
  EXPECT_EQ(finished.load(), kJobs);
}

TEST(ElasticPool, ShutdownRunsWhatIsQueued) {
  std::atomic<int> ran = 0;
  {
    ElasticPool pool(2, /*max_threads=*/2);
    for (int i = 0; i < 100; ++i) pool.enqueue([&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace star::http
