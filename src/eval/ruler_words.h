// Word lists the RULER-style tasks draw keys, values and filler text from.
#pragma once

#include <span>
#include <string_view>

namespace star::eval {

std::span<const std::string_view> key_words();         // needle keys ("tiger")
std::span<const std::string_view> key_adjectives();    // first word of two-word keys ("quiet tiger")
std::span<const std::string_view> value_words();       // word values
std::span<const std::string_view> filler_nouns();      // essay haystack sentences
std::span<const std::string_view> filler_verbs();
std::span<const std::string_view> filler_adjectives();
std::span<const std::string_view> filler_places();

}  // namespace star::eval
