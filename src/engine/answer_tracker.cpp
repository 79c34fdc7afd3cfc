#include "star/engine/answer_tracker.h"

#include <algorithm>
#include <utility>

namespace star {

AnswerTracker::AnswerTracker(const Tokenizer& tokenizer, const LlamaConfig& config, const GenerationOptions& options,
                             TokenSink sink)
    : decoder_(tokenizer, /*skip_special=*/true, /*continues_text=*/true),
      stops_(options.stop_strings),
      stop_ids_(options.stop_token_ids),
      options_(options),
      sink_(std::move(sink)) {
  if (!options.ignore_eos) stop_ids_.insert(stop_ids_.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
}

std::optional<FinishReason> AnswerTracker::add(int32_t t) {
  if (std::find(stop_ids_.begin(), stop_ids_.end(), t) != stop_ids_.end()) {
    emit(t, stops_.flush() + decoder_.flush());
    return FinishReason::kStop;
  }
  tokens_.push_back(t);
  const auto generated = static_cast<int64_t>(tokens_.size());
  std::string piece = stops_.push(decoder_.push(t));
  if (stops_.stopped()) {
    emit(t, piece);
    return FinishReason::kStop;
  }
  if (generated >= options_.max_tokens) {
    emit(t, piece + stops_.push(decoder_.flush()) + stops_.flush());
    return stops_.stopped() ? FinishReason::kStop : FinishReason::kLength;
  }
  if (!emit(t, piece)) return FinishReason::kCancelled;
  return std::nullopt;
}

bool AnswerTracker::emit(int32_t t, const std::string& piece) {
  text_ += piece;
  return sink_ ? sink_(t, piece) : true;
}

}  // namespace star
