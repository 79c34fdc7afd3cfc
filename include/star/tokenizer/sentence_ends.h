// Which tokens end a sentence or a line: the places where a block edge can fall without cutting
// text that belongs together (AttentionConfig::boundary_snap).
#pragma once

#include <cstdint>
#include <vector>

#include "star/tokenizer/tokenizer.h"

namespace star {

// One entry per token id: 1 when the token's text, once trailing spaces, tabs, closing quotes and
// closing brackets are set aside, ends in '.', '!', '?' or a newline; 0 otherwise, and for every
// special token. A '.' inside a number ("3.5") counts too: cutting there is still better than
// cutting a word.
std::vector<uint8_t> sentence_end_tokens(const Tokenizer& tokenizer);

}  // namespace star
