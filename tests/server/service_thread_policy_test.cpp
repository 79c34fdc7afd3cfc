#include "star/server/service_thread_policy.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <thread>

namespace star::server {
namespace {

int policy_of_this_thread() {
  int policy = -1;
  sched_param param{};
  EXPECT_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
  return policy;
}

int policy_of_a_new_thread() {
  int policy = -1;
  std::thread([&] { policy = policy_of_this_thread(); }).join();
  return policy;
}

// Asked directly of the system, on a thread of its own, so that a scope that sets nothing fails
// below instead of passing for a refusal.
bool system_allows_batch() {
  bool allowed = false;
  std::thread([&] {
    const sched_param param{};
    allowed = pthread_setschedparam(pthread_self(), SCHED_BATCH, &param) == 0;
  }).join();
  return allowed;
}

TEST(BatchPolicyScope, ThreadsStartedInsideInheritBatchAndTheCallerGetsItsPolicyBack) {
  if (policy_of_this_thread() != SCHED_OTHER) GTEST_SKIP() << "the test runs under another policy than the default";
  if (!system_allows_batch()) GTEST_SKIP() << "this system refuses SCHED_BATCH (the scope logs it)";
  {
    const BatchPolicyScope scope;
    EXPECT_EQ(policy_of_this_thread(), SCHED_BATCH);
    EXPECT_EQ(policy_of_a_new_thread(), SCHED_BATCH);
    // A thread started by such a thread inherits it in turn (gRPC's pool grows from its own threads).
    int grandchild = -1;
    std::thread([&] {
      const BatchPolicyScope nested;  // already batch: leaves it as it is
      grandchild = policy_of_a_new_thread();
    }).join();
    EXPECT_EQ(grandchild, SCHED_BATCH);
  }
  EXPECT_EQ(policy_of_this_thread(), SCHED_OTHER);
  EXPECT_EQ(policy_of_a_new_thread(), SCHED_OTHER);
}

}  // namespace
}  // namespace star::server
