#include "star/server/worker_loop.h"

namespace star::server {

Status run_worker_loop(StepEngine& engine, Communicator& comm, const std::function<Status()>& wait_for_work) {
  for (;;) {
    // Rank 0 rings before the first step after an idle one; every rank sees the same idle state.
    if (engine.idle() && wait_for_work) {
      if (Status s = wait_for_work(); !s.ok()) return s;
    }
    Result<StepMessage> message = exchange_step(comm, StepMessage{});
    if (!message.ok()) return message.status();
    if (message->shutdown) return ok_status();
    // Request errors reach rank 0 as events too, which reports them; a failed step means the
    // ranks no longer agree.
    if (Result<std::vector<SequenceEvent>> events = engine.step(*message); !events.ok()) return events.status();
  }
}

}  // namespace star::server
