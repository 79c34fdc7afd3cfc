#include "star/engine/generator.h"

#include <algorithm>
#include <optional>
#include <string>

#include "star/engine/single_sequence.h"
#include "star/engine/step_engine.h"
#include "star/engine/stop_strings.h"
#include "star/tokenizer/streaming_decoder.h"

namespace star {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

namespace {

// Rank 0's view of the growing answer: text, stop strings and stop ids.
class AnswerTracker {
 public:
  AnswerTracker(const Tokenizer& tokenizer, const LlamaConfig& config, const GenerationOptions& options,
                const TokenSink& sink)
      : decoder_(tokenizer, /*skip_special=*/true, /*continues_text=*/true), stops_(options.stop_strings), stop_ids_(options.stop_token_ids), options_(options),
        sink_(sink) {
    if (!options.ignore_eos) stop_ids_.insert(stop_ids_.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  }

  // Records token t; returns the reason to stop now, if any.
  std::optional<FinishReason> add(int32_t t, int64_t generated_before) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), t) != stop_ids_.end()) {
      emit(t, stops_.flush() + decoder_.flush());
      return FinishReason::kStop;
    }
    tokens.push_back(t);
    std::string piece = stops_.push(decoder_.push(t));
    if (stops_.stopped()) {
      emit(t, piece);
      return FinishReason::kStop;
    }
    if (generated_before + 1 >= options_.max_tokens) {
      emit(t, piece + stops_.push(decoder_.flush()) + stops_.flush());
      return stops_.stopped() ? FinishReason::kStop : FinishReason::kLength;
    }
    if (!emit(t, piece)) return FinishReason::kCancelled;
    return std::nullopt;
  }

  std::vector<int32_t> tokens;
  std::string text;

 private:
  bool emit(int32_t t, const std::string& piece) {
    text += piece;
    return sink_ ? sink_(t, piece) : true;
  }
  StreamingDecoder decoder_;
  StopStringMatcher stops_;
  std::vector<int32_t> stop_ids_;
  const GenerationOptions& options_;
  const TokenSink& sink_;
};

}  // namespace

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
  int64_t generated = 0;
  // Rank 0 follows the text; its verdict travels to the other ranks as the step messages do.
  auto on_event = [&](const SequenceEvent& e) {
    if (e.kind != SequenceEvent::Kind::kToken) return true;
    if (generated == 0) result.query_logits = e.stats.query_logits;
    std::optional<FinishReason> reason = answer.add(e.token, generated++);
    if (reason) result.finish_reason = *reason;
    return !reason.has_value();
  };
  Result<SequenceStats> stats = run_single_sequence(engine, comm, spec, on_event);
  if (!stats.ok()) return stats.status();
  if (comm.rank() == 0) {
    result.tokens = std::move(answer.tokens);
    result.text = std::move(answer.text);
  }
  result.first_token_seconds = stats->first_token_seconds;
  result.decode_seconds = stats->decode_seconds;
  result.floats_sent = stats->floats_sent;
  result.decode_gather_merge_seconds = stats->decode_gather_merge_seconds;
  result.skip_softmax_tiles = stats->skip_softmax_tiles;
  return result;
}

}  // namespace star
