#include "star/server/service_thread_policy.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include <spdlog/spdlog.h>

namespace star::server {

BatchPolicyScope::BatchPolicyScope() {
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy_, &param) != 0) return;
  priority_ = param.sched_priority;
  // A real-time engine thread (chrt -f) keeps its policy, and so do the threads it starts.
  if (policy_ != SCHED_OTHER) return;
  sched_param batch{};
  if (const int e = pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch); e != 0) {
    spdlog::warn("gRPC threads keep the default scheduling policy: SCHED_BATCH refused ({})", std::strerror(e));
    return;
  }
  changed_ = true;
}

BatchPolicyScope::~BatchPolicyScope() {
  if (!changed_) return;
  sched_param param{};
  param.sched_priority = priority_;
  if (const int e = pthread_setschedparam(pthread_self(), policy_, &param); e != 0) {
    spdlog::warn("the engine thread stays SCHED_BATCH: restoring its policy failed ({})", std::strerror(e));
  }
}

}  // namespace star::server
