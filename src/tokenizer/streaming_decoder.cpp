#include "star/tokenizer/streaming_decoder.h"

#include "utf8.h"

namespace star {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special, bool continues_text)
    : tokenizer_(tokenizer),
      skip_special_(skip_special),
      strip_space_(tokenizer.adds_space_prefix() && !continues_text) {}

std::string StreamingDecoder::push(int32_t id) {
  // A skipped special (BOS) does not count as the start of the text: the space prefix that
  // encode() put after it is still the one to remove.
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  std::string bytes = tokenizer_.token_bytes(id);
  if (strip_space_ && !bytes.empty() && bytes.front() == ' ') bytes.erase(0, 1);
  strip_space_ = false;
  pending_ += bytes;
  std::string text;
  pending_.erase(0, utf8::append_decided(pending_, /*final=*/false, text));
  return text;
}

std::string StreamingDecoder::flush() {
  std::string text;
  utf8::append_decided(pending_, /*final=*/true, text);
  pending_.clear();
  return text;
}

}  // namespace star
