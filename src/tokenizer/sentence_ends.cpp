#include "star/tokenizer/sentence_ends.h"

#include <string>
#include <string_view>

namespace star {
namespace {

bool ends_sentence(std::string_view text) {
  constexpr std::string_view kTrailing = " \t\"')]";
  const size_t last = text.find_last_not_of(kTrailing);
  if (last == std::string_view::npos) return false;
  const char c = text[last];
  return c == '.' || c == '!' || c == '?' || c == '\n';
}

}  // namespace

std::vector<uint8_t> sentence_end_tokens(const Tokenizer& tokenizer) {
  std::vector<uint8_t> ends(static_cast<size_t>(tokenizer.vocab_size()), 0);
  for (size_t id = 0; id < ends.size(); ++id) {
    const auto token = static_cast<int32_t>(id);
    if (tokenizer.is_special(token)) continue;
    ends[id] = ends_sentence(tokenizer.token_bytes(token)) ? 1 : 0;
  }
  return ends;
}

}  // namespace star
