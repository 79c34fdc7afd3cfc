#include <random>

#include "star/http/completion_json.h"
#include "star/http/generation_call.h"
#include "star/http/http_reply.h"
#include "star/http/openai_request.h"
#include "star/http/prompt_tokens.h"
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

std::optional<ApiError> start(RouteContext& ctx, Endpoint endpoint, const httplib::Request& req, Clock::time_point arrived,
                              std::shared_ptr<Generation>& out) {
  nlohmann::json body;
  if (auto e = parse_body(req, body)) return e;
  Result<OpenAiRequest> request = parse_openai_request(endpoint, body);
  if (!request.ok()) return invalid_request(request.status());
  ModelFacts model;
  if (grpc::Status s = ctx.backend.model(model); !s.ok()) return from_backend(s);
  if (request->model != model.id) return model_not_found(request->model, model.id);
  PromptTokens prompt;
  if (auto e = prompt_tokens(ctx.backend, model, *request, prompt)) return e;
  if (prompt.query.empty()) return invalid_request(endpoint == Endpoint::kChat ? "messages" : "prompt", "no tokens to answer");
  // A stored context's length is the backend's to check.
  if (request->star.context_id.empty()) {
    const int64_t room = model.max_positions - prompt.count();
    if (room < 1 || request->max_tokens.value_or(1) > room) {
      return context_too_long(prompt.count(), request->max_tokens.value_or(1), model.max_positions);
    }
    if (!request->max_tokens) request->max_tokens = room;
  }
  auto g = std::make_shared<Generation>(endpoint, model.id, request->include_usage);
  g->stream = request->stream;
  g->prompt_tokens = prompt.count();
  g->call = std::make_unique<GenerationCall>(
      ctx.backend, to_generate_request(*request, std::move(prompt.context), std::move(prompt.query), fresh_seed()),
      arrived);
  if (!g->call->next(g->first)) {
    grpc::Status s = g->call->finish();
    return from_backend(s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without an answer") : s);
  }
  out = std::move(g);
  return std::nullopt;
}

void answer_whole(RouteContext& ctx, Generation& g, httplib::Response& res) {
  std::string text;
  v1::GenerateResponse event = g.first;
  do {
    if (event.has_chunk()) text += event.chunk().text();
  } while (g.call->next(event));
  grpc::Status status = g.call->finish();
  if (!g.call->done()) {
    ctx.metrics.observe_error();
    reply_error(res, from_backend(status));
    return;
  }
  ctx.metrics.observe(g.observation());
  reply_json(res, g.json.whole(text, *g.call->done()));
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
    open = write(sse_event(error_body(from_backend(status))));
  }
  if (open) open = write(kSseDone);
  if (open) sink.done();
  return open;
}

void handle(RouteContext& ctx, Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point arrived = Clock::now();
  std::shared_ptr<Generation> g;
  if (auto error = start(ctx, endpoint, req, arrived, g)) {
    ctx.metrics.observe_error();
    reply_error(res, *error);
    return;
  }
  if (!g->stream) {
    answer_whole(ctx, *g, res);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [&ctx, g](size_t, httplib::DataSink& sink) {
    return stream_events(ctx, *g, sink);
  });
}

}  // namespace

void add_completion_routes(httplib::Server& server, RouteContext& ctx) {
  server.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle(ctx, Endpoint::kChat, req, res);
  });
  server.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle(ctx, Endpoint::kCompletions, req, res);
  });
}

}  // namespace star::http
