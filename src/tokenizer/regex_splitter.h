// RegexSplitter: a pre-tokenizer step that cuts text with a Unicode regex (PCRE2, UTF + UCP,
// JIT-compiled when available), as HF's Split pre-tokenizer with behavior "Isolated" does.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"

struct pcre2_real_code_8;

namespace star {

// GPT-2's pattern, which HF's ByteLevel pre-tokenizer applies when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class RegexSplitter {
 public:
  // Error (kInvalidArgument) with PCRE2's message and offset when the pattern does not compile.
  static Result<RegexSplitter> compile(const std::string& pattern);

  // Appends to `pieces` the matches in `text` and the runs between them, in order, as views into
  // `text`; together they cover it exactly. Invalid UTF-8 never matches and lands in the runs
  // between matches. Safe to call from many threads at once.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  explicit RegexSplitter(std::shared_ptr<pcre2_real_code_8> code) : code_(std::move(code)) {}
  std::shared_ptr<pcre2_real_code_8> code_;
};

}  // namespace star
