// Many independent requests through one StepEngine, as an offline evaluation runs them: at most
// `max_running` at a time, admitted in order as earlier ones end, so that their decode steps run
// as one batched forward (on a GPU, one kernel launch per step for all of them instead of one per
// request). Each request's answer is the one run_inference gives it alone: the step engine's
// answers do not depend on the sequences beside them, and each block's Phase 1 pass is one chunk
// as there.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/generator.h"
#include "star/engine/inference.h"
#include "star/engine/runtime_model.h"

namespace star {

struct BatchAnswer {
  Status status;                // the request's own error: invalid, or failed in the engine
  GenerationResult generation;  // rank 0: tokens, text and finish_reason
};

// Collective: every rank calls it with the same requests. One answer per request, in order; an
// error that stops the engine (a failed collective) is the result's.
Result<std::vector<BatchAnswer>> run_request_batch(const RuntimeModel& model, Communicator& comm,
                                                   std::span<const InferenceRequest> requests, int64_t max_running);

}  // namespace star
