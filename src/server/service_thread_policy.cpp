#include "star/server/service_thread_policy.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include <spdlog/spdlog.h>

namespace star::server {

BatchPolicyScope::BatchPolicyScope() {
  int policy = 0;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) != 0) return;
  // A real-time engine thread (chrt -f) keeps its policy, and so do the threads it starts.
  if (policy != SCHED_OTHER) return;
  const sched_param batch{};
  if (const int e = pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch); e != 0) {
    spdlog::warn("gRPC threads keep the default scheduling policy: SCHED_BATCH refused ({})", std::strerror(e));
    return;
  }
  changed_ = true;
}

BatchPolicyScope::~BatchPolicyScope() {
  if (!changed_) return;
  const sched_param param{};
  if (const int e = pthread_setschedparam(pthread_self(), SCHED_OTHER, &param); e != 0) {
    spdlog::warn("the engine thread stays SCHED_BATCH: restoring its policy failed ({})", std::strerror(e));
  }
}

}  // namespace star::server
