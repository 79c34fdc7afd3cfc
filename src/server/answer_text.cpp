#include "star/server/answer_text.h"

#include <utility>

namespace star::server {

AnswerText::AnswerText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : decoder_(tokenizer, /*skip_special=*/true, /*continues_text=*/true), stops_(std::move(stop_strings)) {}

GeneratedText AnswerText::add(const SampledTokens& tokens) {
  GeneratedText out;
  for (size_t i = 0; i < tokens.ids.size() && !ended_; ++i) {
    const bool last = tokens.ends_answer && i + 1 == tokens.ids.size();
    if (last && tokens.ends_with_stop_id) {
      out.text += stops_.flush();
      out.text += decoder_.flush();
      ended_ = true;
      break;
    }
    out.token_ids.push_back(tokens.ids[i]);
    ++completion_tokens_;
    out.text += stops_.push(decoder_.push(tokens.ids[i]));
    if (stops_.stopped()) {
      ended_ = true;
    } else if (last) {
      // max_tokens: what is held back is the answer's end, unless it completes a stop string.
      out.text += stops_.push(decoder_.flush());
      out.text += stops_.flush();
      ended_ = true;
    }
  }
  return out;
}

FinishReason AnswerText::finish_reason(FinishReason engine_reason) const {
  return stops_.stopped() ? FinishReason::kStop : engine_reason;
}

}  // namespace star::server
