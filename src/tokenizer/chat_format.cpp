#include "star/tokenizer/chat_format.h"

namespace star {
namespace {

constexpr std::string_view kSystemHeader = "<|im_start|>system";
constexpr std::string_view kEndOfTurn = "<|im_end|>";

// A Jinja string literal's text from just after its opening quote up to `end`, escapes resolved
// as Jinja (Python) resolves them: \n \t \r \\ \' \"; a raw newline stays itself.
std::string unescape_literal(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char next = body[++i];
    switch (next) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case '\\': case '\'': case '"': out.push_back(next); break;
      default: out.push_back('\\'); out.push_back(next); break;
    }
  }
  return out;
}

// Whether `body` holds an unescaped `quote`: the literal it started in ends inside it.
bool literal_closes(std::string_view body, char quote) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\\') {
      ++i;
    } else if (body[i] == quote) {
      return true;
    }
  }
  return false;
}

}  // namespace

ChatFormat detect_chat_format(std::string_view chat_template) {
  if (chat_template.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (chat_template.find("[INST]") != std::string_view::npos) return ChatFormat::kLlama2;
  if (chat_template.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatMl;
  return ChatFormat::kNone;
}

std::string chat_default_system(std::string_view chat_template) {
  // A default system turn is one string literal from the system header to <|im_end|>; a header
  // whose literal closes before that (Qwen's '<|im_start|>system\n' + messages[0]['content'])
  // frames a real system message and is skipped.
  for (size_t header = chat_template.find(kSystemHeader); header != std::string_view::npos;
       header = chat_template.find(kSystemHeader, header + 1)) {
    if (header == 0) continue;
    const char quote = chat_template[header - 1];
    if (quote != '\'' && quote != '"') continue;
    const size_t body = header + kSystemHeader.size();
    const size_t end = chat_template.find(kEndOfTurn, body);
    if (end == std::string_view::npos) break;
    if (literal_closes(chat_template.substr(body, end - body), quote)) continue;
    const std::string text = unescape_literal(chat_template.substr(body, end - body));
    // The header ends with its newline; what follows up to <|im_end|> is the message.
    if (text.starts_with('\n')) return text.substr(1);
  }
  return "";
}

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kChatMl: return "chatml";
    case ChatFormat::kNone: break;
  }
  return "";
}

std::optional<ChatFormat> parse_chat_format(std::string_view name) {
  for (ChatFormat f : {ChatFormat::kNone, ChatFormat::kLlama3, ChatFormat::kLlama2, ChatFormat::kChatMl}) {
    if (name == chat_format_name(f)) return f;
  }
  return std::nullopt;
}

}  // namespace star
