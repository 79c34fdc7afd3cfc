// BatchPolicyScope: threads started while it lives take Linux's SCHED_BATCH, the policy they
// inherit from the thread that starts them.
//
// Rank 0's engine thread is on every step's critical path: each of its preemptions leaves the other
// ranks waiting in the step's next collective. The gRPC threads wake once per token to write it;
// under the default policy every wakeup preempts the engine (at 16 streams about once a token), and
// the writes, which tolerate a few milliseconds, were spread as stalls through the steps. SCHED_BATCH
// keeps their fair share of the CPU but gives up wakeup preemption, so they run when the engine's
// time slice ends or it sleeps between requests (MPI's waits poll), and a stream's tokens that pile
// up meanwhile go out as one message. Setting it needs no privilege; where the system refuses,
// threads keep the default policy (logged).
#pragma once

namespace star::server {

class BatchPolicyScope {
 public:
  BatchPolicyScope();
  // Gives the calling thread the default policy back, if the scope took it away.
  ~BatchPolicyScope();
  BatchPolicyScope(const BatchPolicyScope&) = delete;
  BatchPolicyScope& operator=(const BatchPolicyScope&) = delete;

 private:
  bool changed_ = false;  // only from SCHED_OTHER, so that is what the destructor restores
};

}  // namespace star::server
