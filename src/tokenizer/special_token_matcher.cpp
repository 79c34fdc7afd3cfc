#include "special_token_matcher.h"

#include <algorithm>

namespace star {

void SpecialTokenMatcher::add(std::string text, int32_t id, bool always) {
  if (text.empty()) return;
  auto& list = by_first_byte_[static_cast<uint8_t>(text[0])];
  auto pos = std::find_if(list.begin(), list.end(),
                          [&](const Entry& e) { return e.text.size() < text.size(); });
  list.insert(pos, Entry{std::move(text), id, always});
}

std::vector<SpecialTokenMatcher::Fragment> SpecialTokenMatcher::split(std::string_view text,
                                                                      bool parse_special) const {
  std::vector<Fragment> fragments;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const Entry* match = nullptr;
    for (const Entry& e : by_first_byte_[static_cast<uint8_t>(text[i])]) {
      if ((e.always || parse_special) && text.substr(i).starts_with(e.text)) {
        match = &e;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) fragments.push_back({text.substr(plain_start, i - plain_start), -1});
    fragments.push_back({text.substr(i, match->text.size()), match->id});
    i += match->text.size();
    plain_start = i;
  }
  if (plain_start < text.size()) fragments.push_back({text.substr(plain_start), -1});
  return fragments;
}

}  // namespace star
