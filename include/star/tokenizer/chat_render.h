// Chat messages rendered as the model's chat template would render them, split into the Star
// Attention context and query. The query is the last user message with its turn markers plus the
// assistant header that asks for the answer (and anything after that message); the context is
// everything before it: BOS, the system prompt, earlier turns. Llama 2 folds the system prompt
// into the first [INST]: when that is also the last user message, the system part stays in the
// context and the query starts at the user's text. ChatML has no BOS; a chat without a system
// message gets the template's default one (ChatSpecialTokens::default_system), which stays in the
// context.
#pragma once

#include <span>
#include <string>

#include "star/common/status.h"
#include "star/tokenizer/chat_format.h"

namespace star {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

// What the templates take from the model besides the messages.
struct ChatSpecialTokens {
  std::string bos;  // "<|begin_of_text|>", "<s>"
  std::string eos;  // "</s>" (Llama 2 closes assistant turns with it)
  std::string default_system;  // ChatML: the template's system message for chats without one, or ""
};

// Special-token markers appear as their text: tokenize with parse_special (and no added BOS).
struct RenderedChat {
  std::string context;
  std::string query;
  std::string whole() const { return context + query; }
};

// INVALID_ARGUMENT naming "messages" for chats the format cannot express (no user message, a
// Llama 2 chat whose roles do not alternate, a format of kNone). Without `add_generation_prompt`
// the assistant header that asks for the answer is left out (Llama 2 has none: [/INST] ends the
// user turn either way).
Result<RenderedChat> render_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                 const ChatSpecialTokens& tokens, bool add_generation_prompt = true);

}  // namespace star
