#define PCRE2_CODE_UNIT_WIDTH 8
#include "regex_splitter.h"

#include <pcre2.h>

#include <memory>

namespace star {
namespace {

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};

}  // namespace

Result<RegexSplitter> RegexSplitter::compile(const std::string& pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code,
                                   &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return invalid_argument("regex does not compile at offset " + std::to_string(error_offset) +
                            ": " + reinterpret_cast<const char*>(message) + " (pattern: " +
                            pattern + ")");
  }
  // JIT is an optimisation only: where it is unavailable pcre2_match interprets the pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return RegexSplitter(std::shared_ptr<pcre2_code>(code, pcre2_code_free));
}

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(code_.get(), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t gap_start = 0;
  size_t offset = 0;
  while (offset < n) {
    const int rc = pcre2_match(code_.get(), subject, n, offset, 0, md.get(), nullptr);
    // No match, or a resource limit on pathological input: the rest stays one piece.
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.get());
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    if (end > begin) {
      pieces.push_back(text.substr(begin, end - begin));
      gap_start = end;
      offset = end;
    } else {
      // An empty match yields no piece; step over one character so the search moves on.
      gap_start = begin;
      offset = begin + 1;
      while (offset < n && (static_cast<uint8_t>(text[offset]) & 0xC0) == 0x80) ++offset;
    }
  }
  if (gap_start < n) pieces.push_back(text.substr(gap_start));
}

}  // namespace star
