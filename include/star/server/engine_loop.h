// EngineLoop: rank 0's engine thread, the one thread of rank 0 that calls MPI, and the scheduler
// of continuous batching. Each step it
//   - ends the sequences whose requests were cancelled (client, deadline, Abort, shutdown, or a
//     stop string the handler found) and frees their reservations,
//   - starts queued requests, front first, while BatchScheduler allows (--max-num-seqs, the
//     per-rank --kv-cache-bytes budget),
//   - broadcasts one StepMessage (with last step's sampled tokens, contexts to keep and release)
//     and runs StepEngine::step with the worker ranks, timed by a StepWatch,
//   - turns the step's events into channel events (progress, token ids, the end).
// The worker ranks run run_worker_loop: the same steps, from the same messages.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/step_engine.h"
#include "star/server/batch_scheduler.h"
#include "star/server/context_registry.h"
#include "star/server/step_watch.h"
#include "star/server/work_queue.h"

namespace star::server {

// How a job that is cancelled before it runs ends: a Generate with finish reason cancelled and no
// tokens, a CreateContext with CANCELLED.
ChannelEvent cancelled_before_start(const Job& job);

class EngineLoop {
 public:
  // wake_workers: called before a step that follows an idle engine (MpiDoorbell::ring; may be
  // empty), when the worker ranks may be asleep. watch: each step's start and end (--step-timeout).
  EngineLoop(StepEngine& engine, Communicator& comm, WorkQueue& queue, ContextRegistry& registry,
             const SchedulerLimits& limits, std::function<Status()> wake_workers, StepWatch& watch);

  // Runs until the queue is closed and every request ended, then sends every rank the shutdown
  // message. An error means the ranks can no longer agree (a broadcast or a step failed).
  Status run();

 private:
  // A request the engine runs.
  struct Sequence {
    std::shared_ptr<Job> job;
    GenerateSummary summary;                                // Generate: filled as it runs
    std::string keep_as;                                    // CreateContext: the id it gets
    std::string reads_context;                              // Generate on a kept context: its id
    std::shared_ptr<const std::vector<int32_t>> context_ids;  // CreateContext
    AttentionConfig attention;                              // CreateContext
    int context_blocks = 0;
    Clock::time_point started;
  };

  // One step with every rank: wakes them after an idle spell, broadcasts the message, runs it.
  Result<std::vector<SequenceEvent>> step(const StepMessage& message, bool after_idle);
  // Cancelled sequences into message.finished; queued requests into message.admitted.
  void finish_cancelled(StepMessage& message);
  void admit(StepMessage& message);
  // Own tokens the scheduler moves to even out the ranks' loads into message.moved.
  void move_own_tokens(StepMessage& message);
  // A queued request as the engine learns it, or the error its channel gets instead.
  Result<SequenceSpec> sequence_of(int64_t id, Job& job, Sequence& sequence);
  // The step's events into channel events; sampled tokens and keep decisions into next_.
  void deliver(const std::vector<SequenceEvent>& events);
  void on_context_encoded(Sequence& sequence, const SequenceEvent& event);
  // The request ended: its reservation is free and the queue counts it no more.
  void end(int64_t id);
  // The ranks can no longer agree: every running request learns it; returns `why`.
  Status fail_running(const Status& why);

  StepEngine& engine_;
  Communicator& comm_;
  WorkQueue& queue_;
  ContextRegistry& registry_;
  BatchScheduler scheduler_;
  std::function<Status()> wake_workers_;
  StepWatch& watch_;
  int64_t steps_ = 0;
  std::map<int64_t, Sequence> running_;
  int64_t next_id_ = 1;
  StepMessage next_;                          // what the next message carries from this step
  // Contexts kept by next_: their requests learn the ids once it is sent.
  std::vector<std::pair<std::shared_ptr<RequestChannel>, std::string>> created_;
};

}  // namespace star::server
