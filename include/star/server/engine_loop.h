// EngineLoop: rank 0's engine thread, the one thread of rank 0 that calls MPI. It takes jobs off
// the queue, broadcasts each as an EngineCommand, runs it together with the worker ranks through
// RankEngine, and feeds Phase 1 progress, tokens and the outcome to the job's channel.
//
// Jobs run one at a time, so one request's Phase 1 runs at a time. Batched Phase 2 fits here: take
// several queued generate jobs whose contexts are encoded, broadcast them as one command and step
// them together; the queue, channels and worker loop stay as they are.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "star/common/status.h"
#include "star/server/context_registry.h"
#include "star/server/rank_engine.h"
#include "star/server/work_queue.h"

namespace star::server {

// How a job that is cancelled before it runs ends: a Generate with finish reason cancelled and no
// tokens, a CreateContext with CANCELLED.
ChannelEvent cancelled_before_start(const Job& job);

class EngineLoop {
 public:
  // wake_workers: called before each broadcast (MpiDoorbell::ring; may be empty).
  EngineLoop(RankEngine& rank, WorkQueue& queue, ContextRegistry& registry, std::function<Status()> wake_workers);

  // Runs until the queue is closed and empty, then sends every rank the shutdown command.
  // An error means the ranks can no longer agree (a broadcast failed).
  Status run();

 private:
  Status send(const EngineCommand& command);
  Status run_generate(Job& job, GenerateWork& work);
  Status run_create_context(Job& job, CreateContextWork& work);
  Status run_release();
  // Sends a release command for these contexts, if there are any.
  Status release_now(std::vector<std::string> ids);

  RankEngine& rank_;
  WorkQueue& queue_;
  ContextRegistry& registry_;
  std::function<Status()> wake_workers_;
};

}  // namespace star::server
