#include <chrono>

#include "star/http/http_reply.h"
#include "star/http/openai_request.h"
#include "star/http/prompt_tokens.h"
#include "star/http/request_body.h"
#include "star/http/routes.h"

namespace star::http {

namespace {

using json = nlohmann::json;

// The facts, or the error already written to `res`.
std::optional<ModelFacts> model_or_reply(RouteContext& ctx, httplib::Response& res) {
  ModelFacts model;
  if (grpc::Status s = ctx.backend.model(model); !s.ok()) {
    reply_error(res, from_backend(s));
    return std::nullopt;
  }
  return model;
}

// /tokenize and /detokenize take `model` optionally; when given it must be the served one.
bool model_matches(const json& body, const ModelFacts& model, httplib::Response& res) {
  if (!body.contains("model") || body["model"].is_null()) return true;
  if (body["model"].is_string() && body["model"].get<std::string>() == model.id) return true;
  reply_error(res, model_not_found(body["model"].is_string() ? body["model"].get<std::string>() : body["model"].dump(),
                                   model.id));
  return false;
}

json model_object(const ModelFacts& model, int64_t created) {
  return {{"id", model.id},
          {"object", "model"},
          {"created", created},
          {"owned_by", "starserve"},
          {"max_model_len", model.max_positions}};
}

void models(RouteContext& ctx, int64_t created, httplib::Response& res) {
  std::optional<ModelFacts> model = model_or_reply(ctx, res);
  if (!model) return;
  reply_json(res, {{"object", "list"}, {"data", json::array({model_object(*model, created)})}});
}

void one_model(RouteContext& ctx, int64_t created, const std::string& id, httplib::Response& res) {
  std::optional<ModelFacts> model = model_or_reply(ctx, res);
  if (!model) return;
  if (id != model->id) return reply_error(res, model_not_found(id, model->id));
  reply_json(res, model_object(*model, created));
}

// From the backend monitor's last answer: no call waits here, however busy the backend is.
void health(RouteContext& ctx, httplib::Response& res) {
  const BackendHealth h = ctx.backend.health();
  if (h.ok()) return reply_json(res, {{"status", "ok"}});
  if (h.code == grpc::StatusCode::UNAUTHENTICATED) {
    return reply_error(res, make_error(503, "The backend refuses the shim's key (--backend-api-key): " + h.message,
                                       "server_error", "", "backend_unauthenticated"));
  }
  reply_error(res, make_error(503, "The backend is not serving (loading, stopping or unreachable): " + h.message,
                              "server_error", "", "backend_unavailable", 5));
}

// vLLM's /tokenize: {"prompt": "..."} or {"messages": [...], "add_generation_prompt" (default
// true)}, "add_special_tokens" (default true). Special-token text is read as the token, as
// completions read it.
void tokenize(RouteContext& ctx, const std::string& body_text, httplib::Response& res) {
  json body;
  if (auto e = parse_body(body_text, body)) return reply_error(res, *e);
  std::optional<ModelFacts> model = model_or_reply(ctx, res);
  if (!model || !model_matches(body, *model, res)) return;
  const json add_special = body.value("add_special_tokens", json(true));
  if (!add_special.is_boolean()) return reply_error(res, invalid_request("add_special_tokens", "add_special_tokens: must be true or false"));
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    json chat = body;
    chat["model"] = model->id;
    Result<OpenAiRequest> request = parse_openai_request(Endpoint::kChat, chat);
    if (!request.ok()) return reply_error(res, invalid_request(request.status()));
    PromptTokens prompt;
    if (auto e = prompt_tokens(ctx.backend, *model, *request, prompt)) return reply_error(res, *e);
    ids = std::move(prompt.context);
    ids.insert(ids.end(), prompt.query.begin(), prompt.query.end());
  } else {
    if (!body.contains("prompt") || !body["prompt"].is_string()) {
      return reply_error(res, invalid_request("prompt", "prompt: required string (or give messages)"));
    }
    grpc::Status s = ctx.backend.tokenize(body["prompt"].get<std::string>(), add_special.get<bool>(), true, ids);
    if (!s.ok()) return reply_error(res, from_backend(s, {.context = "", .query = "prompt", .attention = ""}));
  }
  reply_json(res, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", model->max_positions}});
}

// vLLM's /detokenize keeps special tokens' text.
void detokenize(RouteContext& ctx, const std::string& body_text, httplib::Response& res) {
  json body;
  if (auto e = parse_body(body_text, body)) return reply_error(res, *e);
  std::optional<ModelFacts> model = model_or_reply(ctx, res);
  if (!model || !model_matches(body, *model, res)) return;
  v1::DetokenizeRequest request;
  request.set_keep_special(true);
  const json tokens = body.value("tokens", json());
  if (!tokens.is_array()) return reply_error(res, invalid_request("tokens", "tokens: required array of token ids"));
  for (const json& id : tokens) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return reply_error(res, invalid_request("tokens", "tokens: must be token ids (integers >= 0)"));
    }
    request.add_ids(id.get<int32_t>());
  }
  auto context = ctx.backend.call();
  v1::DetokenizeResponse response;
  if (grpc::Status s = ctx.backend.star().Detokenize(context.get(), request, &response); !s.ok()) {
    return reply_error(res, from_backend(s));
  }
  reply_json(res, {{"prompt", response.text()}});
}

}  // namespace

void add_info_routes(httplib::Server& server, RouteContext& ctx) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  server.Get("/v1/models", [&ctx, created](const httplib::Request&, httplib::Response& res) { models(ctx, created, res); });
  server.Get("/v1/models/(.+)", [&ctx, created](const httplib::Request& req, httplib::Response& res) {
    one_model(ctx, created, req.matches[1], res);
  });
  server.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) { health(ctx, res); });
  server.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.render(ctx.backend.queue_state()), "text/plain; version=0.0.4; charset=utf-8");
  });
  post_with_body(server, "/tokenize", ctx.options.max_body_bytes,
                 [&ctx](const httplib::Request&, const std::string& body, httplib::Response& res) {
                   tokenize(ctx, body, res);
                 });
  post_with_body(server, "/detokenize", ctx.options.max_body_bytes,
                 [&ctx](const httplib::Request&, const std::string& body, httplib::Response& res) {
                   detokenize(ctx, body, res);
                 });
}

}  // namespace star::http
