// The prompt star-eval feeds a task sample as: RULER's plain text (context, then question and
// answer prefix), or the model's chat template as RULER runs instruction-tuned models: context
// and question in the user turn, the answer prefix opening the assistant's reply. The chat
// prompt is split as the server splits a chat (chat_render.h) except that the sample's context,
// the haystack, stays in the Star Attention context: the query starts at the question.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"
#include "star/eval/ruler_tasks.h"
#include "star/tokenizer/chat_render.h"
#include "star/tokenizer/tokenizer.h"

namespace star::eval {

enum class PromptFormat { kPlain, kChat };
const char* prompt_format_name(PromptFormat format);
std::optional<PromptFormat> parse_prompt_format(std::string_view name);

// The model's chat template as starserve renders it.
struct ChatTemplate {
  ChatFormat format = ChatFormat::kNone;
  ChatSpecialTokens tokens;
};
// From the template text and the tokenizer's BOS and EOS, as the server reports them to star-openai.
ChatTemplate chat_template_of(std::string_view chat_template, const Tokenizer& tokenizer);

struct EvalPrompt {
  std::string context;  // chat: special-token markers as their text
  std::string query;
};

// Plain: the sample's context and query. Chat: the rendering of one user message, the context
// followed by the question, with the answer prefix (leading whitespace dropped) after the
// assistant header. INVALID_ARGUMENT when the template is one starserve cannot render.
Result<EvalPrompt> eval_prompt(const TaskSample& sample, PromptFormat format, const ChatTemplate& chat);

struct PromptIds {
  std::vector<int32_t> context;
  std::vector<int32_t> query;
};
// Plain: the context with BOS, the query without. Chat: both with special tokens parsed and no
// BOS added (the rendering holds the template's own).
PromptIds encode_prompt(const EvalPrompt& prompt, PromptFormat format, const Tokenizer& tokenizer);

// Tokens the format adds to a sample's context and query: the length the tasks leave free for it.
Result<int64_t> prompt_overhead_tokens(PromptFormat format, const ChatTemplate& chat, const Tokenizer& tokenizer);

}  // namespace star::eval
