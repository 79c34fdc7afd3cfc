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

TEST(WorkQueue, FirstInFirstOut) {
  WorkQueue q(4);
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(q.push(request_job(id)).ok());
  EXPECT_EQ(q.size(), 3u);
  for (const char* id : {"a", "b", "c"}) EXPECT_EQ(q.pop()->request_id, id);
  EXPECT_EQ(q.size(), 0u);
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
  q.pop();
  EXPECT_TRUE(q.push(request_job("c")).ok()) << "room again after a pop";
}

TEST(WorkQueue, RemoveTakesOutOnlyQueuedJobs) {
  WorkQueue q(4);
  auto a = request_job("a"), b = request_job("b");
  ASSERT_TRUE(q.push(a).ok());
  ASSERT_TRUE(q.push(b).ok());
  EXPECT_TRUE(q.remove(a));
  EXPECT_FALSE(q.remove(a));
  EXPECT_EQ(q.pop(), b);
  EXPECT_FALSE(q.remove(b)) << "already taken by the engine";
}

TEST(WorkQueue, CloseRefusesNewJobsAndDrainsTheRest) {
  WorkQueue q(4);
  ASSERT_TRUE(q.push(request_job("a")).ok());
  q.close();
  EXPECT_EQ(q.push(request_job("b")).code(), StatusCode::kUnavailable);
  EXPECT_EQ(q.pop()->request_id, "a");
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(WorkQueue, PopWaitsForAPushOrClose) {
  WorkQueue q(4);
  std::shared_ptr<Job> popped;
  std::thread engine([&] { popped = q.pop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(q.push(request_job("late")).ok());
  engine.join();
  ASSERT_NE(popped, nullptr);
  EXPECT_EQ(popped->request_id, "late");

  std::thread idle([&] { popped = q.pop(); });
  q.close();
  idle.join();
  EXPECT_EQ(popped, nullptr);
}

}  // namespace
}  // namespace star::server
