#include "special_token_names.h"

#include <algorithm>
#include <array>

namespace star {

bool is_end_of_turn_name(std::string_view piece) {
  static constexpr std::array<std::string_view, 9> kNames = {
      "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>",
      "<|end|>",    "<end_of_turn>", "</s>",         "<eos>"};
  return std::find(kNames.begin(), kNames.end(), piece) != kNames.end();
}

bool is_begin_of_text_name(std::string_view piece) {
  static constexpr std::array<std::string_view, 4> kNames = {"<|begin_of_text|>", "<s>",
                                                            "<|startoftext|>", "<bos>"};
  return std::find(kNames.begin(), kNames.end(), piece) != kNames.end();
}

}  // namespace star
