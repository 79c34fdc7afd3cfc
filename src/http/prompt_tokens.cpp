#include "star/http/prompt_tokens.h"

namespace star::http {

namespace {

std::optional<ApiError> tokenize(Backend& backend, const std::string& text, bool add_bos, bool parse_special,
                                 std::vector<int32_t>& ids) {
  if (text.empty()) return std::nullopt;
  grpc::Status s = backend.tokenize(text, add_bos, parse_special, ids);
  if (!s.ok()) return from_backend(s);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> prompt_tokens(Backend& backend, const ModelFacts& model, const OpenAiRequest& request,
                                      PromptTokens& out) {
  if (request.endpoint == Endpoint::kCompletions) {
    const bool has_context = !request.star.context.empty();
    if (auto e = tokenize(backend, request.star.context, true, false, out.context)) return e;
    // A stored context already opens with BOS; so does star.context.
    const bool query_bos = !has_context && request.star.context_id.empty();
    return tokenize(backend, request.prompt, query_bos, false, out.query);
  }
  Result<RenderedChat> chat = render_chat(model.chat_format, request.messages, model.special_tokens);
  if (!chat.ok()) return invalid_request(chat.status());
  if (request.star.context_id.empty()) {
    if (auto e = tokenize(backend, chat->context, false, true, out.context)) return e;
    return tokenize(backend, chat->query, false, true, out.query);
  }
  // The stored context stands in for the rendered one and already opens with BOS; a query that
  // had no context before it carries BOS too, which must not appear twice.
  if (auto e = tokenize(backend, chat->query, false, true, out.query)) return e;
  if (!out.query.empty() && out.query.front() == model.bos_token_id) out.query.erase(out.query.begin());
  return std::nullopt;
}

}  // namespace star::http
