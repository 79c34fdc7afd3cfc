#include "star/eval/eval_prompt.h"

#include <vector>

namespace star::eval {

const char* prompt_format_name(PromptFormat format) { return format == PromptFormat::kPlain ? "plain" : "chat"; }

std::optional<PromptFormat> parse_prompt_format(std::string_view name) {
  if (name == "plain") return PromptFormat::kPlain;
  if (name == "chat") return PromptFormat::kChat;
  return std::nullopt;
}

ChatTemplate chat_template_of(std::string_view chat_template, const Tokenizer& tokenizer) {
  ChatTemplate chat{detect_chat_format(chat_template), {}};
  if (tokenizer.bos_id() >= 0) chat.tokens.bos = tokenizer.token_bytes(tokenizer.bos_id());
  if (const std::vector<int32_t> eos = tokenizer.eos_ids(); !eos.empty()) chat.tokens.eos = tokenizer.token_bytes(eos[0]);
  chat.tokens.default_system = chat_default_system(chat_template);
  return chat;
}

Result<EvalPrompt> eval_prompt(const TaskSample& sample, PromptFormat format, const ChatTemplate& chat) {
  if (format == PromptFormat::kPlain) return EvalPrompt{sample.context, sample.query};
  const std::vector<ChatMessage> messages = {{"user", sample.context + sample.question}};
  Result<RenderedChat> rendered = render_chat(chat.format, messages, chat.tokens);
  if (!rendered.ok()) return rendered.status();
  // The question ends the user's text (templates trim only its leading whitespace and the
  // context's), so its last occurrence is where the query begins.
  const size_t question = rendered->query.rfind(sample.question);
  if (question == std::string::npos) {
    return internal_error("the chat rendering lost the question of " + sample.task + " sample " +
                          std::to_string(sample.index));
  }
  const size_t prefix_start = sample.answer_prefix.find_first_not_of(" \t\n");
  const std::string prefix = prefix_start == std::string::npos ? "" : sample.answer_prefix.substr(prefix_start);
  return EvalPrompt{rendered->context + rendered->query.substr(0, question), rendered->query.substr(question) + prefix};
}

PromptIds encode_prompt(const EvalPrompt& prompt, PromptFormat format, const Tokenizer& tokenizer) {
  if (format == PromptFormat::kPlain) {
    return {tokenizer.encode(prompt.context, EncodeOptions{.add_bos = true}), tokenizer.encode(prompt.query)};
  }
  const EncodeOptions special{.parse_special = true};
  return {tokenizer.encode(prompt.context, special), tokenizer.encode(prompt.query, special)};
}

Result<int64_t> prompt_overhead_tokens(PromptFormat format, const ChatTemplate& chat, const Tokenizer& tokenizer) {
  if (format == PromptFormat::kPlain) return 0;
  TaskSample empty;
  empty.question = "?";
  Result<EvalPrompt> prompt = eval_prompt(empty, format, chat);
  if (!prompt.ok()) return prompt.status();
  const PromptIds ids = encode_prompt(*prompt, format, tokenizer);
  // The plain sample counts a BOS of its own; the template's replaces it.
  const int64_t bos = tokenizer.bos_id() >= 0 ? 1 : 0;
  return static_cast<int64_t>(ids.context.size() + ids.query.size()) - 1 - bos;
}

}  // namespace star::eval
