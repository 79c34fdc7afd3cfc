// ChatFormat: which built-in chat rendering a model's chat template follows. starserve does not
// run Jinja; it recognises the two Llama templates by their markers and renders them natively.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace star {

enum class ChatFormat {
  kNone,    // no template, or one starserve does not know: chat requests are refused
  kLlama3,  // <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
  kLlama2,  // <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant </s>
};

// From tokenizer_config.json's chat_template text (empty: kNone).
ChatFormat detect_chat_format(std::string_view chat_template);

// "llama3", "llama2", "" (the names ModelInfo.chat_format carries).
const char* chat_format_name(ChatFormat format);
std::optional<ChatFormat> parse_chat_format(std::string_view name);

}  // namespace star
