#include "star/http/prompt_tokens.h"

namespace star::http {

namespace {

std::optional<ApiError> tokenize(Backend& backend, const std::string& text, bool add_bos, const ClientFields& fields,
                                 std::vector<int32_t>& ids) {
  if (text.empty()) return std::nullopt;
  grpc::Status s = backend.tokenize(text, add_bos, /*parse_special=*/true, ids);
  if (!s.ok()) return from_backend(s, fields);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> prompt_tokens(Backend& backend, const ModelFacts& model, const OpenAiRequest& request,
                                      PromptTokens& out) {
  const ClientFields fields = client_fields(request);
  if (request.endpoint == Endpoint::kCompletions) {
    const bool has_context = !request.star.context.empty();
    if (auto e = tokenize(backend, request.star.context, true, fields, out.context)) return e;
    if (request.prompt_ids) {
      out.query = *request.prompt_ids;
      return std::nullopt;
    }
    // A stored context already opens with BOS; so does star.context.
    const bool query_bos = !has_context && request.star.context_id.empty();
    return tokenize(backend, request.prompt, query_bos, fields, out.query);
  }
  Result<RenderedChat> chat =
      render_chat(model.chat_format, request.messages, model.special_tokens, request.add_generation_prompt);
  if (!chat.ok()) return invalid_request(chat.status());
  if (request.star.context_id.empty()) {
    if (auto e = tokenize(backend, chat->context, false, fields, out.context)) return e;
    return tokenize(backend, chat->query, false, fields, out.query);
  }
  // With a stored context the context is the document, and the whole chat (system message and
  // earlier turns included) is the query read after it, as a vLLM user would put the document in
  // front of the chat. The stored context already opens with BOS, which must not appear twice.
  if (auto e = tokenize(backend, chat->whole(), false, fields, out.query)) return e;
  if (!out.query.empty() && out.query.front() == model.bos_token_id) out.query.erase(out.query.begin());
  return std::nullopt;
}

}  // namespace star::http
