// The worker ranks' side of the server (rank != 0): wait for rank 0's next command, run it with
// the other ranks, repeat until "shutdown".
#pragma once

#include <functional>

#include "star/common/status.h"
#include "star/server/rank_engine.h"

namespace star::server {

// wait_for_work: blocks until rank 0 is about to broadcast (lets an idle rank sleep; may be empty).
// Returns ok after the shutdown command; an error when a broadcast fails or this rank's state
// would no longer match rank 0's.
Status run_worker_loop(RankEngine& engine, const std::function<Status()>& wait_for_work);

}  // namespace star::server
