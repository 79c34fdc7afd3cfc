// SentencePiece's byte-fallback pieces: "<0x41>" stands for the byte 0x41.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace star {

// "<0x41>" -> 0x41. Upper-case hex only: SentencePiece writes it so and llama.cpp looks only
// that form up.
inline std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(piece[3]);
  const int lo = hex(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

}  // namespace star
