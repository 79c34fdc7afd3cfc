#include "star/engine/single_sequence.h"

#include <utility>

namespace star {

Result<SequenceStats> run_single_sequence(StepEngine& engine, Communicator& comm, const SequenceSpec& spec,
                                          const SequenceEventHandler& on_event) {
  if (!engine.idle()) return failed_precondition("run_single_sequence: the engine is running other sequences");
  SequenceStats stats;
  Status failure;
  StepMessage next;
  next.admitted.push_back(spec);
  do {
    Result<StepMessage> message = exchange_step(comm, next);
    if (!message.ok()) return message.status();
    Result<std::vector<SequenceEvent>> events = engine.step(*message);
    if (!events.ok()) return events.status();
    next = {};
    for (SequenceEvent& e : *events) {
      const bool go_on = on_event ? on_event(e) : true;
      switch (e.kind) {
        case SequenceEvent::Kind::kFailed: failure = e.error; break;
        case SequenceEvent::Kind::kContextEncoded:
          stats = e.stats;
          next.keep.push_back(spec.keep_as);
          break;
        case SequenceEvent::Kind::kToken:
          // The token that ends the sequence ends it on every rank when it arrives; one the handler
          // refuses ends it there.
          if (go_on) {
            next.sampled.emplace_back(e.id, e.token);
          } else {
            next.finished.push_back(e.id);
          }
          break;
        case SequenceEvent::Kind::kDone:
        case SequenceEvent::Kind::kPhase1Progress: break;
      }
    }
    if (const SequenceStats* s = engine.stats(spec.id)) stats = *s;
  } while (!engine.idle());
  if (!failure.ok()) return failure;
  return stats;
}

}  // namespace star
