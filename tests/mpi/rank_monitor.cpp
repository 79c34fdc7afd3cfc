// RankMonitor and RankHeartbeat under mpirun (1..4 ranks): a worker whose heartbeat connection
// closes without a goodbye (what a killed process leaves) is reported by rank and pid; workers
// that say goodbye before leaving are not reported, and neither is a rank 0 that says goodbye to
// its workers (a silent rank 0 is the end-to-end RankFailure test's: it needs a stopped process).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "star/server/rank_monitor.h"
#include "support/mpi_world.h"

namespace star::server {
namespace {

using namespace std::chrono_literals;
using star::testing::world;

std::vector<int32_t> all_pids(Communicator& comm) {
  std::vector<int32_t> pids(comm.size());
  const int32_t mine = ::getpid();
  EXPECT_TRUE(comm.all_gather(&mine, sizeof(mine), pids.data()).ok());
  return pids;
}

TEST(RankMonitor, AWorkerGoneWithoutGoodbyeIsReportedByRankAndPid) {
  auto comm = world();
  if (comm->size() == 1) GTEST_SKIP() << "no worker ranks";
  const int leaving = comm->size() - 1;
  const std::vector<int32_t> pids = all_pids(*comm);
  if (comm->rank() == 0) {
    std::promise<std::string> lost;
    // A long silence limit: only the closed connection can be the reason.
    auto monitor = RankMonitor::start(*comm, 30s, "", [&](const std::string& why) { lost.set_value(why); });
    EXPECT_TRUE(monitor.ok()) << monitor.status().to_string();
    ASSERT_TRUE(comm->barrier().ok());
    std::future<std::string> why = lost.get_future();
    ASSERT_EQ(why.wait_for(20s), std::future_status::ready);
    EXPECT_EQ(why.get(), "rank " + std::to_string(leaving) + " (pid " + std::to_string(pids[leaving]) +
                             ") is lost: its heartbeat connection closed without a goodbye (the process died)");
    ASSERT_TRUE(comm->barrier().ok());
  } else {
    auto heartbeat = RankHeartbeat::start(*comm, [](const std::string& why) { ADD_FAILURE() << why; });
    EXPECT_TRUE(heartbeat.ok()) << heartbeat.status().to_string();
    ASSERT_TRUE(comm->barrier().ok());
    if (comm->rank() == leaving) heartbeat->reset();
    ASSERT_TRUE(comm->barrier().ok());
    if (comm->rank() != leaving) (*heartbeat)->say_goodbye();
  }
}

TEST(RankMonitor, WorkersThatSayGoodbyeAreNotReported) {
  auto comm = world();
  std::atomic<bool> reported{false};
  if (comm->rank() == 0) {
    auto monitor = RankMonitor::start(*comm, 200ms, "", [&](const std::string&) { reported = true; });
    EXPECT_TRUE(monitor.ok()) << monitor.status().to_string();
    ASSERT_TRUE(comm->barrier().ok());
    // Five silence limits after every worker left.
    std::this_thread::sleep_for(1s);
  } else {
    auto heartbeat = RankHeartbeat::start(*comm, [](const std::string& why) { ADD_FAILURE() << why; });
    EXPECT_TRUE(heartbeat.ok()) << heartbeat.status().to_string();
    (*heartbeat)->say_goodbye();
    heartbeat->reset();
    ASSERT_TRUE(comm->barrier().ok());
  }
  EXPECT_FALSE(reported.load());
}

// Rank 0 beats too: workers that outlive rank 0's monitor by many silence limits are not told
// rank 0 is lost, since its monitor said goodbye before closing; while it runs they hear it.
TEST(RankMonitor, WorkersHearRank0AndItsGoodbye) {
  auto comm = world();
  std::atomic<int> rank0_lost{0};
  if (comm->rank() == 0) {
    auto monitor = RankMonitor::start(*comm, 200ms, "", [](const std::string& why) { ADD_FAILURE() << why; });
    ASSERT_TRUE(monitor.ok()) << monitor.status().to_string();
    std::this_thread::sleep_for(1s);  // five silence limits: the workers must keep hearing rank 0
    ASSERT_TRUE(comm->barrier().ok());
    monitor->reset();
    ASSERT_TRUE(comm->barrier().ok());
  } else {
    auto heartbeat = RankHeartbeat::start(*comm, [&](const std::string&) { ++rank0_lost; });
    ASSERT_TRUE(heartbeat.ok()) << heartbeat.status().to_string();
    ASSERT_TRUE(comm->barrier().ok());
    ASSERT_TRUE(comm->barrier().ok());
    std::this_thread::sleep_for(1s);  // rank 0's connection is closed now, after its goodbye
    (*heartbeat)->say_goodbye();
  }
  EXPECT_EQ(rank0_lost.load(), 0);
}

}  // namespace
}  // namespace star::server
