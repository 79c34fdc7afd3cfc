// The worker ranks' side of the server (rank != 0): receive rank 0's next StepMessage, run the
// step with the other ranks, repeat until the shutdown message.
#pragma once

#include <functional>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/step_engine.h"

namespace star::server {

// wait_for_work: blocks until rank 0 is about to broadcast (lets an idle rank sleep; may be empty);
// called only while the engine is idle, when rank 0 rings before its next message.
// Returns ok after the shutdown message; an error when a broadcast or a step fails (this rank's
// state would no longer match rank 0's).
Status run_worker_loop(StepEngine& engine, Communicator& comm, const std::function<Status()>& wait_for_work);

}  // namespace star::server
