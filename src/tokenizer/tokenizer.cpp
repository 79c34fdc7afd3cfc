#include "star/tokenizer/tokenizer.h"

#include "star/tokenizer/streaming_decoder.h"

namespace star {

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  StreamingDecoder decoder(*this, skip_special);
  std::string text;
  for (int32_t id : ids) text += decoder.push(id);
  text += decoder.flush();
  return text;
}

}  // namespace star
