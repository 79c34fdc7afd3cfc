#include "star/tokenizer/chat_format.h"

namespace star {

ChatFormat detect_chat_format(std::string_view chat_template) {
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (chat_template.find("[INST]") != std::string_view::npos) return ChatFormat::kLlama2;
  return ChatFormat::kNone;
}

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kNone: break;
  }
  return "";
}

std::optional<ChatFormat> parse_chat_format(std::string_view name) {
  for (ChatFormat f : {ChatFormat::kNone, ChatFormat::kLlama3, ChatFormat::kLlama2}) {
    if (name == chat_format_name(f)) return f;
  }
  return std::nullopt;
}

}  // namespace star
