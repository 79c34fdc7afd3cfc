// ChatFormat: which built-in chat rendering a model's chat template follows. starserve does not
// run Jinja; it recognises the Llama and ChatML templates by their markers and renders them natively.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace star {

enum class ChatFormat {
  kNone,    // no template, or one starserve does not know: chat requests are refused
  kLlama3,  // <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
  kLlama2,  // <s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant </s>
  kChatMl,  // <|im_start|>role\ncontent<|im_end|>\n (SmolLM2, Qwen)
};

// From the chat_template text of tokenizer_config.json or a GGUF's tokenizer.chat_template
// (empty: kNone).
ChatFormat detect_chat_format(std::string_view chat_template);

// The system message a ChatML template writes when a conversation has none (SmolLM2's "You are a
// helpful AI assistant named SmolLM, ..."), read from the template's literal
// '<|im_start|>system\n...<|im_end|>' with its string escapes resolved; empty when it has none.
std::string chat_default_system(std::string_view chat_template);

// "llama3", "llama2", "chatml", "" (the names ModelInfo.chat_format carries).
const char* chat_format_name(ChatFormat format);
std::optional<ChatFormat> parse_chat_format(std::string_view name);

}  // namespace star
