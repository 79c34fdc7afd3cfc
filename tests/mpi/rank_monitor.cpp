// RankMonitor and RankHeartbeat under mpirun (1..4 ranks): a worker whose heartbeat connection
// closes without a goodbye (what a killed process leaves) is reported by rank and pid; workers
// that say goodbye before leaving are not reported.
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
    auto heartbeat = RankHeartbeat::start(*comm);
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
    auto heartbeat = RankHeartbeat::start(*comm);
    EXPECT_TRUE(heartbeat.ok()) << heartbeat.status().to_string();
    (*heartbeat)->say_goodbye();
    heartbeat->reset();
    ASSERT_TRUE(comm->barrier().ok());
  }
  EXPECT_FALSE(reported.load());
}

}  // namespace
}  // namespace star::server
