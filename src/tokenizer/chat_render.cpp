#include "star/tokenizer/chat_render.h"

#include <vector>

namespace star {

namespace {

constexpr const char* kWhitespace = " \t\n\r\f\v";

// Jinja's trim and Python's str.strip() on ASCII whitespace.
std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(kWhitespace);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(kWhitespace) - first + 1);
}

// The rendering as consecutive pieces; `query_start` is the piece the query begins with.
struct Pieces {
  std::vector<std::string> pieces;
  size_t query_start = 0;

  RenderedChat split() const {
    RenderedChat out;
    for (size_t i = 0; i < pieces.size(); ++i) (i < query_start ? out.context : out.query) += pieces[i];
    return out;
  }
};

size_t last_user(std::span<const ChatMessage> messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user") return i;
  }
  return messages.size();
}

// Meta's Llama 3 Instruct template: BOS, then per message
// "<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>", then the assistant header.
Pieces render_llama3(std::span<const ChatMessage> messages, size_t user, const ChatSpecialTokens& tokens,
                     bool add_generation_prompt) {
  Pieces p;
  p.pieces.push_back(tokens.bos);
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == user) p.query_start = p.pieces.size();
    p.pieces.push_back("<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) +
                       "<|eot_id|>");
  }
  if (add_generation_prompt) p.pieces.push_back("<|start_header_id|>assistant<|end_header_id|>\n\n");
  // A chat of one user message has no context: BOS opens the query (the server's rule too).
  if (p.query_start == 1) p.query_start = 0;
  return p;
}

// Meta's Llama 2 chat template: "<s>[INST] {user} [/INST]" and " {assistant} </s>" per turn, the
// system prompt as "<<SYS>>\n{system}\n<</SYS>>\n\n" in front of the first user text, the whole
// of which is stripped.
Result<Pieces> render_llama2(std::span<const ChatMessage> messages, size_t user, const ChatSpecialTokens& tokens) {
  size_t first = 0;
  std::string system;
  const bool has_system = !messages.empty() && messages[0].role == "system";
  if (has_system) {
    system = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n";
    first = 1;
  }
  Pieces p;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool user_turn = (i - first) % 2 == 0;
    if ((m.role == "user") != user_turn || (m.role != "user" && m.role != "assistant")) {
      return invalid_argument("messages[" + std::to_string(i) +
                              "]: Llama 2 chats are an optional system message, then user and assistant messages "
                              "in turn, starting with user");
    }
    if (i == user) p.query_start = p.pieces.size();
    if (m.role == "assistant") {
      p.pieces.push_back(std::string(" ").append(trim(m.content)).append(" ").append(tokens.eos));
      continue;
    }
    if (i == first && has_system) {
      // strip() of system + content: the system text keeps its end, the user text loses its tail.
      const std::string prefix = tokens.bos + "[INST] " + system;
      const std::string whole = tokens.bos + "[INST] " + trim(system + m.content);
      const size_t cut = std::min(prefix.size(), whole.size());
      p.pieces.push_back(whole.substr(0, cut));
      if (i == user) p.query_start = p.pieces.size();
      p.pieces.push_back(whole.substr(cut) + " [/INST]");
      continue;
    }
    p.pieces.push_back(tokens.bos + "[INST] " + trim(m.content) + " [/INST]");
  }
  return p;
}

// ChatML as SmolLM2's template writes it: "<|im_start|>{role}\n{content}<|im_end|>\n" per message,
// content as given (no trim), the template's own system message first when the chat has none,
// then the assistant header when `add_generation_prompt`.
Pieces render_chatml(std::span<const ChatMessage> messages, size_t user, std::string_view default_system,
                     bool add_generation_prompt) {
  Pieces p;
  auto turn = [](std::string_view role, std::string_view content) {
    return std::string("<|im_start|>").append(role).append("\n").append(content).append("<|im_end|>\n");
  };
  if (!default_system.empty() && messages[0].role != "system") p.pieces.push_back(turn("system", default_system));
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == user) p.query_start = p.pieces.size();
    p.pieces.push_back(turn(messages[i].role, messages[i].content));
  }
  if (add_generation_prompt) p.pieces.push_back("<|im_start|>assistant\n");
  return p;
}

}  // namespace

Result<RenderedChat> render_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                 const ChatSpecialTokens& tokens, bool add_generation_prompt) {
  if (format == ChatFormat::kNone) {
    return invalid_argument("messages: the model has no chat template starserve knows (Llama 3, Llama 2 or ChatML); "
                            "use /v1/completions");
  }
  const size_t user = last_user(messages);
  if (user == messages.size()) return invalid_argument("messages: no message with role 'user'");
  if (format == ChatFormat::kLlama3) return render_llama3(messages, user, tokens, add_generation_prompt).split();
  if (format == ChatFormat::kChatMl) {
    return render_chatml(messages, user, tokens.default_system, add_generation_prompt).split();
  }
  Result<Pieces> pieces = render_llama2(messages, user, tokens);
  if (!pieces.ok()) return pieces.status();
  return pieces->split();
}

}  // namespace star
