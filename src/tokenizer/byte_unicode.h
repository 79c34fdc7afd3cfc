// GPT-2's reversible byte <-> Unicode mapping: byte-level BPE vocabularies write every byte as a
// printable character (space -> "Ġ" U+0120, newline -> "Ċ" U+010A, printable ASCII -> itself).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace star {

// The UTF-8 text of the character that stands for each byte.
const std::array<std::string, 256>& byte_to_unicode();

// The bytes a vocabulary string stands for; nullopt when a character is not one of the 256.
std::optional<std::string> unicode_to_bytes(std::string_view mapped);

}  // namespace star
