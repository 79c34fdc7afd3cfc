// Rank 0's view of one growing answer: its text (special tokens skipped), stop strings and stop
// ids, token by token as the step engine samples them. generate() and run_request_batch() share it,
// so a request's text is the same whichever ran it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "star/engine/generator.h"
#include "star/engine/stop_strings.h"
#include "star/model/llama_config.h"
#include "star/tokenizer/streaming_decoder.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

class AnswerTracker {
 public:
  // `options` must outlive the tracker. The model's end ids stop the answer unless ignore_eos.
  AnswerTracker(const Tokenizer& tokenizer, const LlamaConfig& config, const GenerationOptions& options,
                TokenSink sink = {});

  // Records the answer's next token t; returns the reason to stop now, if any (a stop id, a stop
  // string, max_tokens, or a sink that cancels). Nothing is added after a reason.
  std::optional<FinishReason> add(int32_t t);

  const std::vector<int32_t>& tokens() const { return tokens_; }  // stop ids excluded
  const std::string& text() const { return text_; }               // cut before any stop string

 private:
  bool emit(int32_t t, const std::string& piece);

  StreamingDecoder decoder_;
  StopStringMatcher stops_;
  std::vector<int32_t> stop_ids_;
  const GenerationOptions& options_;
  TokenSink sink_;
  std::vector<int32_t> tokens_;
  std::string text_;
};

}  // namespace star
