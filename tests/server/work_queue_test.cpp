#include "star/server/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace star::server {
namespace {

std::shared_ptr<Job> request_job(const std::string& id) {
  auto job = std::make_shared<Job>();
  job->work = GenerateWork{};
  job->request_id = id;
  job->channel = std::make_shared<RequestChannel>();
  return job;
}

std::shared_ptr<Job> release_job() {
  auto job = std::make_shared<Job>();
  job->work = ReleaseWork{};
  return job;
}

std::vector<std::string> ids(const std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<std::string> out;
  for (const auto& job : jobs) out.push_back(job->request_id);
  return out;
}

TEST(WorkQueue, FirstInFirstOutAndTakenOnce) {
  WorkQueue q(4);
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(q.push(request_job(id)).ok());
  EXPECT_EQ(q.size(), 3u);
  std::vector<std::shared_ptr<Job>> waiting = q.waiting();
  EXPECT_EQ(ids(waiting), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(q.take(waiting[1]));
  EXPECT_FALSE(q.take(waiting[1]));
  EXPECT_EQ(ids(q.waiting()), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(q.size(), 2u);
}

TEST(WorkQueue, TakenRequestsRunUntilTheyEnd) {
  WorkQueue q(4);
  ASSERT_TRUE(q.push(request_job("a")).ok());
  ASSERT_TRUE(q.push(release_job()).ok());
  for (const auto& job : q.waiting()) EXPECT_TRUE(q.take(job));
  EXPECT_EQ(q.running(), 1u) << "a release is no request";
  q.ended();
  EXPECT_EQ(q.running(), 0u);
}

TEST(WorkQueue, AFullQueueRefusesRequestsButNotReleases) {
  WorkQueue q(2);
  ASSERT_TRUE(q.push(request_job("a")).ok());
  ASSERT_TRUE(q.push(request_job("b")).ok());
  Status full = q.push(request_job("c"));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("queue is full (2 requests waiting)"), std::string::npos);
  EXPECT_TRUE(q.push(release_job()).ok());
  EXPECT_EQ(q.size(), 2u) << "releases do not count against the capacity";
  q.take(q.waiting().front());
  EXPECT_TRUE(q.push(request_job("c")).ok()) << "room again after a take";
}

TEST(WorkQueue, RemoveTakesOutOnlyQueuedJobs) {
  WorkQueue q(4);
  auto a = request_job("a"), b = request_job("b");
  ASSERT_TRUE(q.push(a).ok());
  ASSERT_TRUE(q.push(b).ok());
  EXPECT_TRUE(q.remove(a));
  EXPECT_FALSE(q.remove(a));
  EXPECT_FALSE(q.take(a)) << "its handler took it out";
  EXPECT_TRUE(q.take(b));
  EXPECT_FALSE(q.remove(b)) << "already taken by the engine";
}

TEST(WorkQueue, CloseRefusesNewJobsAndDrainsTheRest) {
  WorkQueue q(4);
  ASSERT_TRUE(q.push(request_job("a")).ok());
  q.close();
  EXPECT_EQ(q.push(request_job("b")).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(q.wait_for_work());
  EXPECT_TRUE(q.take(q.waiting().front()));
  EXPECT_FALSE(q.wait_for_work());
}

TEST(WorkQueue, WaitForWorkWaitsForAPushOrClose) {
  WorkQueue q(4);
  bool work = false;
  std::thread engine([&] { work = q.wait_for_work(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(q.push(request_job("late")).ok());
  engine.join();
  EXPECT_TRUE(work);
  ASSERT_TRUE(q.take(q.waiting().front()));

  std::thread idle([&] { work = q.wait_for_work(); });
  q.close();
  idle.join();
  EXPECT_FALSE(work);
}

// Past the shutdown's cut the engine starts no request: each one's handler cuts it at that moment
// and must be the one to answer it, so the engine waits for the handlers to take them back out.
TEST(WorkQueue, PastTheShutdownCutRequestsStayForTheirHandlers) {
  WorkQueue q(4);
  auto a = request_job("a");
  auto release = release_job();
  ASSERT_TRUE(q.push(a).ok());
  ASSERT_TRUE(q.push(release).ok());
  q.close(Clock::now());
  EXPECT_FALSE(q.take(a)) << "a request past the cut is its handler's";
  EXPECT_TRUE(q.wait_for_work()) << "a release still runs";
  EXPECT_TRUE(q.take(release));
  bool work = true;
  std::thread engine([&] { work = q.wait_for_work(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(q.remove(a));
  engine.join();
  EXPECT_FALSE(work) << "closed, and nothing left once the handler took its request";
}

}  // namespace
}  // namespace star::server
