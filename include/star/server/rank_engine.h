// RankEngine: one rank's part of the server: the encoded contexts it holds and the collective
// engine calls behind each command. Rank 0 (EngineLoop) and the worker ranks (run_worker_loop)
// call the same methods in the same order, so every collective matches.
// Errors: a request the engine refuses is INVALID_ARGUMENT on every rank alike; INTERNAL means
// the ranks may no longer agree (a failed collective, or a context one rank lacks), and the server
// must stop.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <unordered_map>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"
#include "star/server/engine_command.h"

namespace star::server {

struct GenerateOutcome {
  GenerationResult generation;
  int64_t context_tokens = 0;
  double phase1_seconds = 0;  // this rank's wall time encoding an inline context; 0 for an encoded one
  SkipSoftmaxTiles phase1_skip_softmax_tiles;  // every rank's, for an inline context
};

// Rank 0's choice about a context just encoded (the Result is that rank's own Phase 1 outcome).
using AdmitPolicy = std::function<AdmitDecision(const Result<EncodedContext>&)>;

class RankEngine {
 public:
  RankEngine(const RuntimeModel& model, Communicator& comm) : model_(model), comm_(comm) {}

  const RuntimeModel& model() const { return model_; }
  Communicator& comm() { return comm_; }

  // Drops these contexts here (ids this rank does not hold are ignored).
  void release(std::span<const std::string> ids);
  bool holds(const std::string& context_id) const { return contexts_.contains(context_id); }

  // op generate: Phase 1 of the inline context and Phase 2, or Phase 2 alone on an encoded
  // context. `progress` and `sink` matter on rank 0 only.
  Result<GenerateOutcome> generate(const EngineCommand& command, const BlockProgress& progress = {},
                                   const TokenSink& sink = {});

  // op create_context: Phase 1, then rank 0 applies `admit` and broadcasts its decision, which
  // every rank follows (workers pass no policy). Returns this rank's context when it was kept,
  // the Phase 1 error, or FAILED_PRECONDITION when rank 0 did not keep it; INTERNAL when rank 0
  // kept a context this rank failed to encode.
  Result<const EncodedContext*> create_context(const EngineCommand& command, const BlockProgress& progress,
                                               const AdmitPolicy& admit);

  size_t context_count() const { return contexts_.size(); }

 private:
  const RuntimeModel& model_;
  Communicator& comm_;
  std::unordered_map<std::string, EncodedContext> contexts_;
};

}  // namespace star::server
