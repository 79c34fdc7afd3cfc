#include <algorithm>
#include <atomic>
#include <random>

#include "star/http/client_socket.h"
#include "star/http/completion_json.h"
#include "star/http/generation_call.h"
#include "star/http/http_reply.h"
#include "star/http/openai_request.h"
#include "star/http/prompt_tokens.h"
#include "star/http/request_body.h"
#include "star/http/routes.h"
#include "star/http/sse.h"

namespace star::http {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t fresh_seed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// A generation whose first event has been read: errors the backend reports when it admits the
// request (bad field, queue full) still become the HTTP status, before any stream begins.
struct Generation {
  Generation(Endpoint endpoint, const std::string& model, bool include_usage) : json(endpoint, model, include_usage) {}
  CompletionJson json;
  bool stream = false;
  int64_t prompt_tokens = 0;
  ClientFields fields;
  std::atomic<bool> client_gone = false;  // set by the connection watch
  std::unique_ptr<GenerationCall> call;
  v1::GenerateResponse first;

  // What the metrics record; a generation cut short by its client counts as aborted.
  RequestObservation observation() const {
    RequestObservation o = call->observation();
    if (!call->done()) {
      o.prompt_tokens = prompt_tokens;
      o.finish_reason = v1::FINISH_REASON_CANCELLED;
    }
    return o;
  }
};

// The answer's length when the client gives none: the room left in the window, capped by the
// server's --max-tokens-limit, with or without a stored context (whose length the backend lists).
// An explicit max_tokens over the limit is refused naming it; one over the room (or no room at all)
// is context_length_exceeded.
std::optional<ApiError> settle_max_tokens(Backend& backend, const ModelFacts& model, const PromptTokens& prompt,
                                          OpenAiRequest& request) {
  const int64_t limit = model.max_tokens_limit > 0 ? model.max_tokens_limit : INT64_MAX;
  if (request.max_tokens && *request.max_tokens > static_cast<uint64_t>(limit)) {
    return max_tokens_over_limit(request.max_tokens_field, std::to_string(*request.max_tokens), limit);
  }
  int64_t context = static_cast<int64_t>(prompt.context.size());
  if (!request.star.context_id.empty()) {
    // An unknown context is the backend's to report (404 naming star.context_id).
    context = backend.context_tokens(request.star.context_id).value_or(0);
  }
  const int64_t used = context + static_cast<int64_t>(prompt.query.size());
  const int64_t room = model.max_positions - used;
  const int64_t wanted = request.max_tokens ? static_cast<int64_t>(*request.max_tokens) : 1;
  if (room < 1 || wanted > room) {
    return context_too_long(used, wanted, model.max_positions,
                            request.endpoint == Endpoint::kChat ? "messages" : "prompt");
  }
  if (!request.max_tokens) request.max_tokens = static_cast<uint64_t>(std::min(room, limit));
  return std::nullopt;
}

std::optional<ApiError> start(RouteContext& ctx, Endpoint endpoint, const std::string& body_text,
                              Clock::time_point arrived, const std::string& client, std::shared_ptr<Generation>& out) {
  nlohmann::json body;
  if (auto e = parse_body(body_text, body)) return e;
  Result<OpenAiRequest> request = parse_openai_request(endpoint, body);
  if (!request.ok()) return invalid_request(request.status());
  ModelFacts model;
  if (grpc::Status s = ctx.backend.model(model); !s.ok()) return from_backend(s);
  if (request->model != model.id) return model_not_found(request->model, model.id);
  PromptTokens prompt;
  if (auto e = prompt_tokens(ctx.backend, model, *request, prompt)) return e;
  if (prompt.query.empty()) return invalid_request(endpoint == Endpoint::kChat ? "messages" : "prompt", "no tokens to answer");
  if (auto e = settle_max_tokens(ctx.backend, model, prompt, *request)) return e;
  auto g = std::make_shared<Generation>(endpoint, model.id, request->include_usage);
  g->stream = request->stream;
  g->prompt_tokens = prompt.count();
  g->fields = client_fields(*request);
  g->call = std::make_unique<GenerationCall>(
      ctx.backend, to_generate_request(*request, std::move(prompt.context), std::move(prompt.query), fresh_seed()),
      arrived, client);
  if (!g->call->next(g->first)) {
    grpc::Status s = g->call->finish();
    ctx.backend.observe_failure(s);
    return from_backend(s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without an answer") : s,
                        g->fields);
  }
  out = std::move(g);
  return std::nullopt;
}

// The client's hang-up cancels the call: nothing is written until the end, so only the watch
// notices it.
void answer_whole(RouteContext& ctx, Generation& g, const httplib::Request& req, httplib::Response& res) {
  std::optional<ConnectionWatch::Watching> watching;
  if (std::optional<int> fd = client_socket(req)) {
    watching.emplace(ctx.connections.watch(*fd, [&g] {
      g.client_gone = true;
      g.call->cancel();
    }));
  }
  std::string text;
  v1::GenerateResponse event = g.first;
  do {
    if (event.has_chunk()) text += event.chunk().text();
  } while (g.call->next(event));
  watching.reset();
  grpc::Status status = g.call->finish();
  const v1::GenerateDone* done = g.call->done() ? &*g.call->done() : nullptr;
  if (g.client_gone) {
    ctx.metrics.observe(g.observation());
    return;
  }
  if (auto error = whole_answer_error(status, done, g.fields)) {
    ctx.backend.observe_failure(status);
    if (done != nullptr) {
      ctx.metrics.observe(g.observation());
    } else {
      ctx.metrics.observe_error();
    }
    reply_error(res, *error);
    return;
  }
  ctx.metrics.observe(g.observation());
  reply_json(res, g.json.whole(text, *done));
}

// Relays the generation as SSE. A failed write means the client left: the backend call is
// cancelled so that the ranks stop.
bool stream_events(RouteContext& ctx, Generation& g, httplib::DataSink& sink) {
  auto write = [&sink](const std::string& s) { return sink.write(s.data(), s.size()); };
  bool open = g.json.endpoint() == Endpoint::kChat ? write(sse_event(g.json.role_chunk())) : true;
  v1::GenerateResponse event = g.first;
  bool more = true;
  while (open && more) {
    if (event.has_progress()) {
      // A comment line: clients skip it, and it finds out early whether the client is still there.
      open = write(": phase1 " + std::to_string(event.progress().blocks_done()) + "/" +
                   std::to_string(event.progress().blocks_total()) + "\n\n");
    } else if (event.has_chunk() && !event.chunk().text().empty()) {
      open = write(sse_event(g.json.text_chunk(event.chunk().text())));
    }
    if (open) more = g.call->next(event);
  }
  if (!open) {
    g.call->cancel();
    ctx.metrics.observe(g.observation());
    return false;
  }
  grpc::Status status = g.call->finish();
  if (const auto& done = g.call->done()) {
    ctx.metrics.observe(g.observation());
    open = write(sse_event(g.json.finish_chunk(done->finish_reason())));
    if (open && g.json.include_usage()) open = write(sse_event(g.json.usage_chunk(done->usage())));
  } else {
    ctx.metrics.observe_error();
    open = write(sse_event(error_body(from_backend(status, g.fields))));
  }
  if (open) open = write(kSseDone);
  if (open) sink.done();
  return open;
}

void handle(RouteContext& ctx, Endpoint endpoint, const httplib::Request& req, const std::string& body,
            httplib::Response& res) {
  const Clock::time_point arrived = Clock::now();
  std::shared_ptr<Generation> g;
  if (auto error = start(ctx, endpoint, body, arrived, req.remote_addr, g)) {
    ctx.metrics.observe_error();
    reply_error(res, *error);
    return;
  }
  if (!g->stream) {
    answer_whole(ctx, *g, req, res);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [&ctx, g](size_t, httplib::DataSink& sink) {
    return stream_events(ctx, *g, sink);
  });
}

}  // namespace

void add_completion_routes(httplib::Server& server, RouteContext& ctx) {
  post_with_body(server, "/v1/chat/completions", ctx.options.max_body_bytes,
                 [&ctx](const httplib::Request& req, const std::string& body, httplib::Response& res) {
                   handle(ctx, Endpoint::kChat, req, body, res);
                 });
  post_with_body(server, "/v1/completions", ctx.options.max_body_bytes,
                 [&ctx](const httplib::Request& req, const std::string& body, httplib::Response& res) {
                   handle(ctx, Endpoint::kCompletions, req, body, res);
                 });
}

}  // namespace star::http
