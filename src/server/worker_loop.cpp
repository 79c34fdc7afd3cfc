#include "star/server/worker_loop.h"

#include <spdlog/spdlog.h>

namespace star::server {

namespace {

// A request error reaches rank 0 too, which reports it; only a disagreement between ranks stops us.
Status check_outcome(const Status& s) {
  if (s.ok() || s.code() != StatusCode::kInternal) {
    if (!s.ok()) spdlog::debug("request failed on this rank as on rank 0: {}", s.to_string());
    return ok_status();
  }
  return s;
}

}  // namespace

Status run_worker_loop(RankEngine& engine, const std::function<Status()>& wait_for_work) {
  for (;;) {
    if (wait_for_work) {
      if (Status s = wait_for_work(); !s.ok()) return s;
    }
    Result<EngineCommand> command = receive_command(engine.comm());
    if (!command.ok()) return command.status();
    engine.release(command->release);
    switch (command->op) {
      case EngineCommand::Op::kShutdown:
        return ok_status();
      case EngineCommand::Op::kRelease:
        break;
      case EngineCommand::Op::kGenerate:
        if (Status s = check_outcome(engine.generate(*command).status()); !s.ok()) return s;
        break;
      case EngineCommand::Op::kCreateContext:
        if (Status s = check_outcome(engine.create_context(*command, {}, {}).status()); !s.ok()) return s;
        break;
    }
  }
}

}  // namespace star::server
