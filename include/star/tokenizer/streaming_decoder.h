// StreamingDecoder: turns ids into text one token at a time, for streaming generated text.
// A token that ends inside a UTF-8 sequence emits nothing until the sequence completes, so every
// piece returned is valid UTF-8; concatenated pushes plus flush() equal Tokenizer::decode().
#pragma once

#include <cstdint>
#include <string>

#include "star/tokenizer/tokenizer.h"

namespace star {

class StreamingDecoder {
 public:
  // continues_text: the ids continue text that was decoded elsewhere (e.g. tokens generated after
  // a prompt). Then the space in front of the first token is real text and is kept; otherwise the
  // space a SentencePiece vocabulary prefixes to a text is removed, as a whole-text decode does.
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = true,
                            bool continues_text = false);

  // The text that became complete with token `id` (possibly empty).
  std::string push(int32_t id);
  // Whatever is left: bytes of an unfinished UTF-8 sequence, as U+FFFD.
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  bool strip_space_;       // the next emitted token loses one leading space
  std::string pending_;    // bytes that may still start a valid UTF-8 sequence
};

}  // namespace star
