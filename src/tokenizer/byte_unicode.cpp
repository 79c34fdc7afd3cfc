#include "byte_unicode.h"

#include <unordered_map>

#include "utf8.h"

namespace star {
namespace {

// bytes_to_unicode() of GPT-2's encoder.py: printable Latin-1 bytes map to themselves, the
// other 68 to U+0100 onwards, in byte order.
std::array<uint32_t, 256> byte_code_points() {
  std::array<uint32_t, 256> cps{};
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    cps[b] = printable ? b : next++;
  }
  return cps;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    const auto cps = byte_code_points();
    for (size_t b = 0; b < 256; ++b) utf8::append_code_point(cps[b], t[b]);
    return t;
  }();
  return table;
}

std::optional<std::string> unicode_to_bytes(std::string_view mapped) {
  static const std::unordered_map<uint32_t, uint8_t> inverse = [] {
    std::unordered_map<uint32_t, uint8_t> m;
    const auto cps = byte_code_points();
    for (size_t b = 0; b < 256; ++b) m[cps[b]] = static_cast<uint8_t>(b);
    return m;
  }();
  std::string bytes;
  size_t i = 0;
  while (i < mapped.size()) {
    // Every mapped character is below U+0144: one or two UTF-8 bytes.
    const auto b0 = static_cast<uint8_t>(mapped[i]);
    uint32_t cp;
    if (b0 < 0x80) {
      cp = b0;
      i += 1;
    } else if ((b0 & 0xE0) == 0xC0 && i + 1 < mapped.size() &&
               (static_cast<uint8_t>(mapped[i + 1]) & 0xC0) == 0x80) {
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(mapped[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return std::nullopt;
    }
    auto it = inverse.find(cp);
    if (it == inverse.end()) return std::nullopt;
    bytes.push_back(static_cast<char>(it->second));
  }
  return bytes;
}

}  // namespace star
