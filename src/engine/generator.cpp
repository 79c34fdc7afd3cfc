#include "star/engine/generator.h"

#include <optional>
#include <string>

#include "star/engine/answer_tracker.h"
#include "star/engine/single_sequence.h"
#include "star/engine/step_engine.h"

namespace star {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

Result<GenerationResult> generate(EngineModel& model, const Tokenizer& tokenizer, const ShardLayout& layout,
                                  Communicator& comm, KvShard& shard, std::span<const int32_t> query_ids,
                                  const GenerationOptions& options, const TokenSink& sink) {
  // One sequence alone through the step engine, on a context it borrows: the same path as a
  // request among others.
  StepEngine engine(model, comm, StepLimits{});
  const std::string context_id = "generate";
  if (Status s = engine.borrow_context(context_id, layout, shard); !s.ok()) return s;
  SequenceSpec spec;
  spec.context_id = context_id;
  spec.query_ids.assign(query_ids.begin(), query_ids.end());
  spec.generation = options;

  GenerationResult result;
  AnswerTracker answer(tokenizer, model.config(), options, sink);
  // Rank 0 follows the text; its verdict travels to the other ranks as the step messages do.
  auto on_event = [&](const SequenceEvent& e) {
    if (e.kind != SequenceEvent::Kind::kToken) return true;
    if (answer.tokens().empty()) result.query_logits = e.stats.query_logits;
    std::optional<FinishReason> reason = answer.add(e.token);
    if (reason) result.finish_reason = *reason;
    return !reason.has_value();
  };
  Result<SequenceStats> stats = run_single_sequence(engine, comm, spec, on_event);
  if (!stats.ok()) return stats.status();
  if (comm.rank() == 0) {
    result.tokens = answer.tokens();
    result.text = answer.text();
  }
  result.first_token_seconds = stats->first_token_seconds;
  result.decode_seconds = stats->decode_seconds;
  result.floats_sent = stats->floats_sent;
  result.decode_gather_merge_seconds = stats->decode_gather_merge_seconds;
  result.skip_softmax_tiles = stats->skip_softmax_tiles;
  return result;
}

}  // namespace star
