// AnswerText: one Generate request's answer as text, made on its gRPC handler thread from the token
// ids the engine streams, so the engine (MPI) thread never detokenizes. It decodes in a stream
// (StreamingDecoder) and holds back text that may still become a stop string (StopStringMatcher),
// exactly as generate() does for a request run alone; a stop string the engine cannot see ends
// the answer here, and the handler then cancels the sequence on the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "star/engine/generator.h"
#include "star/engine/stop_strings.h"
#include "star/server/request_channel.h"
#include "star/tokenizer/streaming_decoder.h"
#include "star/tokenizer/tokenizer.h"

namespace star::server {

// Consecutive answer tokens and their text, as one chunk of the stream.
struct GeneratedText {
  std::vector<int32_t> token_ids;
  std::string text;
};

class AnswerText {
 public:
  AnswerText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings);

  // The engine's next tokens; returns what the client is to see of them (ids and text, maybe
  // empty). After a stop string matched, later tokens are not part of the answer: nothing.
  GeneratedText add(const SampledTokens& tokens);

  // A stop string matched: the answer ends with the token that completed it (finish reason stop),
  // whatever the engine reports afterwards.
  bool stopped() const { return stops_.stopped(); }
  // Tokens in the answer (stop ids are not).
  int64_t completion_tokens() const { return completion_tokens_; }
  // How the answer ended, given the engine's reason: a stop string makes it kStop.
  FinishReason finish_reason(FinishReason engine_reason) const;

 private:
  StreamingDecoder decoder_;
  StopStringMatcher stops_;
  bool ended_ = false;
  int64_t completion_tokens_ = 0;
};

}  // namespace star::server
