// Well-known special-token texts, used to find BOS and end-of-turn tokens by name when a
// tokenizer file does not say which they are. Names only: ids always come from the file.
#pragma once

#include <string_view>

namespace star {

// "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "</s>", ...: generation stops at these.
bool is_end_of_turn_name(std::string_view piece);
// "<|begin_of_text|>", "<s>", ...
bool is_begin_of_text_name(std::string_view piece);

}  // namespace star
