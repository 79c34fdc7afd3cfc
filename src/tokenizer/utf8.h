// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace star::utf8 {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Appends the prefix of `bytes` that is decided: valid sequences as they are, each maximal
// ill-formed subpart as one U+FFFD (the WHATWG / Python / Rust from_utf8_lossy convention).
// A trailing incomplete sequence is held back (not consumed) unless `final`, where it becomes
// U+FFFD. Returns the number of bytes consumed.
size_t append_decided(std::string_view bytes, bool final, std::string& out);

// Appends the UTF-8 encoding of `code_point` (must be a Unicode scalar value).
void append_code_point(uint32_t code_point, std::string& out);

}  // namespace star::utf8
