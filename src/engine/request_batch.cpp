#include "star/engine/request_batch.h"

#include <memory>
#include <optional>
#include <string>

#include "star/engine/answer_tracker.h"
#include "star/engine/step_engine.h"

namespace star {

Result<std::vector<BatchAnswer>> run_request_batch(const RuntimeModel& model, Communicator& comm,
                                                   std::span<const InferenceRequest> requests, int64_t max_running) {
  if (max_running < 1) return invalid_argument("max_running must be at least 1, got " + std::to_string(max_running));
  const bool root = comm.rank() == 0;
  std::vector<BatchAnswer> answers(requests.size());
  std::vector<size_t> to_run;
  for (size_t i = 0; i < requests.size(); ++i) {
    answers[i].status = validate_request(model.llama->config(), requests[i]);
    if (answers[i].status.ok()) to_run.push_back(i);
  }
  // Whole blocks a step, as run_inference encodes them.
  StepEngine engine(model, comm, StepLimits{.max_num_batched_tokens = 0});
  std::vector<std::unique_ptr<AnswerTracker>> trackers(requests.size());
  size_t admitted = 0;
  int64_t running = 0;
  StepMessage next;
  // Rank 0 schedules; the other ranks follow its messages until the one that shuts the loop down.
  // Sequence id = request index + 1.
  while (true) {
    if (root) {
      for (; running < max_running && admitted < to_run.size(); ++admitted, ++running) {
        const size_t i = to_run[admitted];
        const InferenceRequest& r = requests[i];
        SequenceSpec spec;
        spec.id = static_cast<int64_t>(i) + 1;
        spec.context_ids = r.context_ids;
        spec.attention = r.attention;
        spec.query_ids = r.query_ids;
        spec.generation = r.generation;
        next.admitted.push_back(std::move(spec));
        trackers[i] = std::make_unique<AnswerTracker>(*model.tokenizer, model.llama->config(), r.generation);
      }
      next.shutdown = running == 0;
    }
    Result<StepMessage> message = exchange_step(comm, next);
    if (!message.ok()) return message.status();
    if (message->shutdown) break;
    Result<std::vector<SequenceEvent>> events = engine.step(*message);
    if (!events.ok()) return events.status();
    next = {};
    if (!root) continue;
    for (const SequenceEvent& e : *events) {
      const auto i = static_cast<size_t>(e.id - 1);
      if (e.kind == SequenceEvent::Kind::kFailed) {
        answers[i].status = e.error;
        --running;
      } else if (e.kind == SequenceEvent::Kind::kToken) {
        // As generate(): every token goes back to the ranks until the answer's end, whose id goes
        // in `finished` (a stop id or the max_tokens-th token has ended it on rank 0 already).
        const std::optional<FinishReason> reason = trackers[i]->add(e.token);
        if (!reason) {
          next.sampled.emplace_back(e.id, e.token);
          continue;
        }
        answers[i].generation.finish_reason = *reason;
        next.finished.push_back(e.id);
        --running;
      }
    }
  }
  if (root) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (trackers[i] == nullptr) continue;
      answers[i].generation.tokens = trackers[i]->tokens();
      answers[i].generation.text = trackers[i]->text();
    }
  }
  return answers;
}

}  // namespace star
