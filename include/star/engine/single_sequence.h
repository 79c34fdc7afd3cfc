// One sequence alone through a StepEngine, for the single-request helpers (generate, answer_query,
// encode_request_context), so that a request alone and a request among others share one path.
#pragma once

#include <functional>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/step_engine.h"

namespace star {

// Called with each event this rank gets for the sequence. On rank 0 for a kToken: returning false
// finishes the sequence after that token (a stop string, a cancelled sink).
using SequenceEventHandler = std::function<bool(const SequenceEvent&)>;

// Collective: runs `spec` through `engine` (which must be idle) until it ends, rank 0 building each
// step's message from the last step's events; a context-only sequence's context is kept under
// spec.keep_as. Returns this rank's stats of the sequence, or the sequence's kFailed error.
Result<SequenceStats> run_single_sequence(StepEngine& engine, Communicator& comm, const SequenceSpec& spec,
                                          const SequenceEventHandler& on_event = {});

}  // namespace star
