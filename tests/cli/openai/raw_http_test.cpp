// Must show 2: SSE framing, error shapes and codes, and auth, spoken in raw HTTP to star-openai
// in front of `mpirun -np 2 star-server`.
#include <gtest/gtest.h>

#include <set>

#include "openai_fixture.h"

namespace star::testing {
namespace {

using json = nlohmann::json;

class StopShared : public ::testing::Environment {
 public:
  void TearDown() override { OpenAiE2E::stop_shared(); }
};
const auto* const kStopShared = ::testing::AddGlobalTestEnvironment(new StopShared);

class RawHttp : public OpenAiE2E {};

// The error shape: {"error": {"message", "type", "param", "code"}}; returns the error object.
json expect_error(const httplib::Result& r, int status) {
  EXPECT_TRUE(r) << "no answer";
  if (!r) return {};
  EXPECT_EQ(r->status, status) << r->body;
  EXPECT_TRUE(r->get_header_value("Content-Type").starts_with("application/json"));
  const json body = json::parse(r->body, nullptr, false);
  EXPECT_TRUE(body.is_object() && body.contains("error")) << r->body;
  if (!body.is_object() || !body.contains("error")) return {};
  const json& e = body["error"];
  for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(e.contains(key)) << key << ": " << r->body;
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
  return e;
}

TEST_F(RawHttp, ChatStreamIsFramedAsOpenAiDoes) {
  const json body = chat_body("What did the fox do?", 12,
                              {{"temperature", 0.8}, {"seed", 7}, {"stream", true},
                               {"stream_options", {{"include_usage", true}}}});
  httplib::Result r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(r->get_header_value("Content-Type").starts_with("text/event-stream"));
  const SseStream sse = parse_sse(r->body);
  EXPECT_TRUE(sse.well_framed) << r->body;
  ASSERT_GE(sse.data.size(), 4u) << r->body;
  EXPECT_EQ(sse.data.back(), "[DONE]");
  std::vector<json> chunks;
  for (size_t i = 0; i + 1 < sse.data.size(); ++i) chunks.push_back(json::parse(sse.data[i]));
  std::set<std::string> ids;
  for (const json& c : chunks) {
    ids.insert(c["id"].get<std::string>());
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["model"], kModelId);
  }
  EXPECT_EQ(ids.size(), 1u) << "every chunk carries the one id";
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 2 < chunks.size(); ++i) {
    EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null()) << i;
    EXPECT_TRUE(chunks[i]["usage"].is_null()) << "usage only in the last chunk";
    text += chunks[i]["choices"][0]["delta"].value("content", "");
  }
  const json& last = chunks[chunks.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  const json& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
  EXPECT_EQ(usage["usage"]["total_tokens"].get<int>(),
            usage["usage"]["prompt_tokens"].get<int>() + usage["usage"]["completion_tokens"].get<int>());

  // The same request whole: the same text and usage.
  json whole_body = body;
  whole_body.erase("stream");
  whole_body.erase("stream_options");
  httplib::Result whole = post("/v1/chat/completions", whole_body);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json w = json::parse(whole->body);
  EXPECT_EQ(w["object"], "chat.completion");
  EXPECT_EQ(w["choices"][0]["message"]["content"].get<std::string>(), text);
  EXPECT_EQ(w["usage"]["prompt_tokens"], usage["usage"]["prompt_tokens"]);
  EXPECT_EQ(w["usage"]["completion_tokens"], 12);
}

TEST_F(RawHttp, CompletionStreamHasNoRoleAndEndsWithDone) {
  httplib::Result r = post("/v1/completions", {{"model", kModelId}, {"prompt", "Once upon a time"}, {"max_tokens", 5},
                                               {"ignore_eos", true}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const SseStream sse = parse_sse(r->body);
  EXPECT_TRUE(sse.well_framed);
  ASSERT_GE(sse.data.size(), 2u);
  EXPECT_EQ(sse.data.back(), "[DONE]");
  const json last = json::parse(sse.data[sse.data.size() - 2]);
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage")) << "no usage chunk without stream_options.include_usage";
}

TEST_F(RawHttp, AuthGuardsTheApiButNotHealthOrMetrics) {
  httplib::Client c = shim().client();
  const std::string body = chat_body("hi", 1).dump();
  json e = expect_error(c.Post("/v1/chat/completions", body, "application/json"), 401);
  EXPECT_EQ(e["code"], "invalid_api_key");
  expect_error(c.Post("/v1/chat/completions", auth("wrong"), body, "application/json"), 401);
  expect_error(c.Get("/v1/models", httplib::Headers{{"Authorization", "shim-key"}}), 401);
  expect_error(c.Post("/tokenize", json{{"prompt", "x"}}.dump(), "application/json"), 401);
  httplib::Result ok = c.Post("/v1/chat/completions", auth(), body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  httplib::Result health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  httplib::Result metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST_F(RawHttp, BadRequestsGetTheErrorShapeAndTheShimKeepsServing) {
  json e = expect_error(post("/v1/chat/completions", json("not an object")), 400);
  httplib::Client c = shim().client();
  e = expect_error(c.Post("/v1/chat/completions", auth(), "{\"model\": ", "application/json"), 400);
  EXPECT_EQ(e["param"], "body");
  e = expect_error(post("/v1/chat/completions", chat_body("hi", 4, {{"temperature", 7}})), 400);
  EXPECT_EQ(e["param"], "temperature");
  EXPECT_EQ(e["type"], "invalid_request_error");
  e = expect_error(post("/v1/chat/completions", chat_body("hi", 4, {{"n", 3}})), 400);
  EXPECT_EQ(e["param"], "n");
  e = expect_error(post("/v1/chat/completions", chat_body("hi", 4, {{"messages", {{{"role", "user"}}}}})), 400);
  EXPECT_EQ(e["param"], "messages[0].content");
  e = expect_error(post("/v1/chat/completions", chat_body("hi", 4, {{"model", "gpt-4"}})), 404);
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_EQ(e["param"], "model");
  e = expect_error(post("/v1/completions", {{"model", kModelId}, {"prompt", "x"}, {"stop_token_ids", {999999}}}), 400);
  EXPECT_EQ(e["param"], "stop_token_ids[0]") << "the backend's own check, relayed";
  e = expect_error(post("/v1/completions", {{"model", kModelId}, {"prompt", "x"}, {"star", {{"context_id", "nope"}}}}),
                   404);
  EXPECT_EQ(e["param"], "star.context_id") << "the client's field, not the backend request's";
  e = expect_error(post("/v1/completions", {{"model", kModelId}, {"prompt", "x"},
                                            {"star", {{"attention", {{"algorithm", "warp"}}}}}}),
                   400);
  EXPECT_NE(e["message"].get<std::string>().find("algorithm"), std::string::npos) << e.dump();
  e = expect_error(c.Get("/v1/nothing-here", auth()), 404);
  // Everything still works.
  httplib::Result ok = post("/v1/chat/completions", chat_body("hi", 2));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(RawHttp, ContextTooLongNamesTheTokenCounts) {
  httplib::Result tokens = post("/tokenize", {{"model", kModelId}, {"messages", chat_body("Why?", 1)["messages"]}});
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->status, 200) << tokens->body;
  const json t = json::parse(tokens->body);
  const int64_t prompt = t["count"];
  const int64_t positions = t["max_model_len"];
  ASSERT_EQ(static_cast<int64_t>(t["tokens"].size()), prompt);
  json e = expect_error(post("/v1/chat/completions", chat_body("Why?", static_cast<int>(positions))), 400);
  EXPECT_EQ(e["code"], "context_length_exceeded");
  const std::string message = e["message"];
  EXPECT_NE(message.find(std::to_string(positions) + " tokens"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(prompt + positions) + " tokens"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(prompt) + " in the messages"), std::string::npos) << message;
  // One token more than the room left is refused too: the limit is exact.
  e = expect_error(post("/v1/chat/completions", chat_body("Why?", static_cast<int>(positions - prompt + 1))), 400);
  EXPECT_EQ(e["code"], "context_length_exceeded");
}

TEST_F(RawHttp, BodiesOverTheLimitAre413) {
  const std::string huge = chat_body(std::string(kMaxBodyBytes, 'a'), 1).dump();
  httplib::Client c = shim().client();
  json e = expect_error(c.Post("/v1/chat/completions", auth(), huge, "application/json"), 413);
  EXPECT_EQ(e["code"], "request_too_large");
}

TEST_F(RawHttp, ModelsTokenizeAndDetokenize) {
  httplib::Client c = shim().client();
  httplib::Result models = c.Get("/v1/models", auth());
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  const json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], kModelId);
  EXPECT_EQ(m["data"][0]["object"], "model");

  // The backend's own tokenizer is the reference.
  auto stub = v1::StarService::NewStub(server().channel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", std::string("Bearer ") + kBackendKey);
  v1::TokenizeRequest request;
  request.set_text("The fox jumps.");
  request.set_add_bos(true);
  v1::TokenizeResponse reference;
  ASSERT_TRUE(stub->Tokenize(&context, request, &reference).ok());
  httplib::Result tokens = post("/tokenize", {{"prompt", "The fox jumps."}});
  ASSERT_TRUE(tokens);
  const json t = json::parse(tokens->body);
  EXPECT_EQ(t["tokens"].get<std::vector<int32_t>>(), std::vector<int32_t>(reference.ids().begin(), reference.ids().end()));
  httplib::Result text = post("/detokenize", {{"tokens", t["tokens"]}});
  ASSERT_TRUE(text);
  // Special tokens keep their text, as vLLM's /detokenize does.
  grpc::ClientContext info_context;
  info_context.AddMetadata("authorization", std::string("Bearer ") + kBackendKey);
  v1::ModelInfo info;
  ASSERT_TRUE(stub->GetModelInfo(&info_context, {}, &info).ok());
  EXPECT_EQ(json::parse(text->body)["prompt"], info.bos_token() + "The fox jumps.");
  json e = expect_error(post("/detokenize", {{"tokens", {"a"}}}), 400);
  EXPECT_EQ(e["param"], "tokens");
}

// A shim whose backend is not there: /health and requests say 503 with Retry-After.
TEST_F(RawHttp, BackendUnavailableIs503WithRetryAfter) {
  ShimProcess orphan({"--backend", "127.0.0.1:1"});
  ASSERT_TRUE(orphan.ready()) << orphan.log();
  httplib::Client c = orphan.client();
  json e = expect_error(c.Get("/health"), 503);
  httplib::Result r = c.Post("/v1/chat/completions", chat_body("hi", 1).dump(), "application/json");
  e = expect_error(r, 503);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  EXPECT_EQ(e["code"], "backend_unavailable");
}

}  // namespace
}  // namespace star::testing
