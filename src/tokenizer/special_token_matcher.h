// Finds special and added tokens written out in text, so they can be encoded as one id each.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace star {

class SpecialTokenMatcher {
 public:
  // always: matched even without parse_special (HF's non-special added tokens, GGUF's
  // user-defined tokens); otherwise only with parse_special. Empty text is ignored.
  void add(std::string text, int32_t id, bool always);

  struct Fragment {
    std::string_view text;  // a run of plain text (id == -1) or the matched token's text
    int32_t id;
  };
  // Cuts `text` into plain runs and tokens: at the leftmost position where a token matches, the
  // longest token there wins (HF's Aho-Corasick LeftmostLongest). No empty fragments.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool always;
  };
  std::array<std::vector<Entry>, 256> by_first_byte_;  // each list longest first
};

}  // namespace star
