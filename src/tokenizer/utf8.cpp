#include "utf8.h"

namespace star::utf8 {
namespace {

// Length of the sequence a lead byte starts and the range its second byte must fall in
// (Unicode Table 3-7, Well-Formed UTF-8 Byte Sequences); length 0 for a byte that starts none.
struct LeadByte {
  int length;
  uint8_t second_lo;
  uint8_t second_hi;
};

LeadByte classify(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t append_decided(std::string_view bytes, bool final, std::string& out) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const LeadByte lead = classify(b);
    if (lead.length == 0) {
      out.append(kReplacementChar);
      ++i;
      continue;
    }
    int k = 1;
    for (; k < lead.length; ++k) {
      if (i + k >= n) break;
      const auto c = static_cast<uint8_t>(bytes[i + k]);
      const uint8_t lo = k == 1 ? lead.second_lo : 0x80;
      const uint8_t hi = k == 1 ? lead.second_hi : 0xBF;
      if (c < lo || c > hi) break;
    }
    if (k == lead.length) {
      out.append(bytes.substr(i, k));
      i += k;
    } else if (i + k >= n && !final) {
      return i;  // a valid beginning whose end has not arrived yet
    } else {
      out.append(kReplacementChar);
      i += k;
    }
  }
  return i;
}

void append_code_point(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace star::utf8
