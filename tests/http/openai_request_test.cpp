// Request bodies: every bad field is refused with a message that starts with its name, and the
// accepted ones become the GenerateRequest the server expects.
#include <gtest/gtest.h>

#include "star/http/api_error.h"
#include "star/http/openai_request.h"

namespace star::http {
namespace {

using json = nlohmann::json;

json chat(json extra = json::object()) {
  json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  body.update(extra);
  return body;
}

// The param the 400 would name, or "" when the body is accepted.
std::string refused_field(Endpoint endpoint, const json& body) {
  Result<OpenAiRequest> r = parse_openai_request(endpoint, body);
  if (r.ok()) return "";
  return invalid_request(r.status()).param;
}

TEST(OpenAiRequest, BadFieldsAreNamed) {
  EXPECT_EQ(refused_field(Endpoint::kChat, json::object({{"messages", json::array()}})), "model");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"model", 3}})), "model");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"messages", json::array()}})), "messages");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"messages", {{{"role", "robot"}, {"content", "x"}}}}})),
            "messages[0].role");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"messages", {{{"role", "user"}}}}})), "messages[0].content");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"temperature", 2.5}})), "temperature");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"temperature", "hot"}})), "temperature");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"top_p", 0}})), "top_p");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"max_tokens", 0}})), "max_tokens");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"max_completion_tokens", 1.5}})), "max_completion_tokens");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"n", 2}})), "n");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"stop", {"a", 1}}})), "stop");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"stop", ""}})), "stop");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"stream", "yes"}})), "stream");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"stream_options", {{"include_usage", true}}}})), "stream_options");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"min_tokens", 3}})), "min_tokens");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"stop_token_ids", {-1}}})), "stop_token_ids");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"logprobs", true}})), "logprobs");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"star", {{"bogus", 1}}}})), "star.bogus");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"star", {{"context", "doc"}}}})), "star.context");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"star", {{"attention", {{"block_size", "big"}}}}}})),
            "star.attention");
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "tiny"}}), "prompt");
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "tiny"}, {"prompt", {"a", "b"}}}), "prompt");
  EXPECT_EQ(refused_field(Endpoint::kChat, json::array()), "body");
}

TEST(OpenAiRequest, AcceptedFieldsReachTheGenerateRequest) {
  Result<OpenAiRequest> r = parse_openai_request(
      Endpoint::kChat,
      chat({{"max_tokens", 5}, {"max_completion_tokens", 7}, {"temperature", 0.5}, {"top_p", 0.9}, {"top_k", 40},
            {"seed", 11}, {"stop", "END"}, {"stop_token_ids", {3, 4}}, {"ignore_eos", true}, {"n", 1},
            {"stream", true}, {"stream_options", {{"include_usage", true}}},
            {"star", {{"attention", {{"algorithm", "star"}, {"block_size", 64}}}}},
            {"messages", {{{"role", "developer"}, {"content", "sys"}},
                          {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}},
                                                          {{"type", "text"}, {"text", "b"}}}}}}}}));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "ab");
  const v1::GenerateRequest g = to_generate_request(*r, {1, 2}, {3}, /*seed=*/99);
  EXPECT_EQ(g.max_tokens(), 7);  // max_completion_tokens wins
  EXPECT_FLOAT_EQ(g.sampling().temperature(), 0.5f);
  EXPECT_FLOAT_EQ(g.sampling().top_p(), 0.9f);
  EXPECT_EQ(g.sampling().top_k(), 40);
  EXPECT_EQ(g.sampling().seed(), 11u);
  ASSERT_EQ(g.stop_size(), 1);
  EXPECT_EQ(g.stop(0), "END");
  EXPECT_EQ(g.stop_token_ids_size(), 2);
  EXPECT_TRUE(g.ignore_eos());
  ASSERT_TRUE(g.has_tokens());
  EXPECT_EQ(g.tokens().context_ids_size(), 2);
  EXPECT_EQ(g.tokens().query_ids_size(), 1);
  EXPECT_EQ(g.attention().algorithm(), "star");
  EXPECT_EQ(g.attention().block_size(), 64);
}

TEST(OpenAiRequest, DefaultsFollowOpenAi) {
  Result<OpenAiRequest> r = parse_openai_request(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", {"once"}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompt, "once");
  const v1::GenerateRequest g = to_generate_request(*r, {}, {5}, /*seed=*/99);
  EXPECT_FLOAT_EQ(g.sampling().temperature(), 1.0f);
  EXPECT_FALSE(g.sampling().has_top_p());
  EXPECT_EQ(g.sampling().seed(), 99u);  // no seed given: the caller's fresh one
  EXPECT_FALSE(g.has_attention());
}

TEST(OpenAiRequest, ContextIdMakesASessionRequest) {
  Result<OpenAiRequest> r = parse_openai_request(
      Endpoint::kCompletions, json{{"model", "m"}, {"prompt", "q"}, {"star", {{"context_id", "ctx-1"}}}});
  ASSERT_TRUE(r.ok());
  const v1::GenerateRequest g = to_generate_request(*r, {}, {7, 8}, 0);
  ASSERT_TRUE(g.has_session());
  EXPECT_EQ(g.session().context_id(), "ctx-1");
  EXPECT_EQ(g.session().query_ids().ids_size(), 2);
  EXPECT_EQ(refused_field(Endpoint::kCompletions,
                          json{{"model", "m"}, {"prompt", "q"},
                               {"star", {{"context_id", "c"}, {"attention", {{"algorithm", "star"}}}}}}),
            "star.attention");
}

TEST(ApiError, BackendStatusesMapToHttp) {
  ApiError e = from_backend(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "max_tokens: -1 (must be >= 0)"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "max_tokens");
  e = from_backend(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full"));
  EXPECT_EQ(e.http_status, 503);
  EXPECT_GT(e.retry_after_seconds, 0);
  e = from_backend(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  EXPECT_EQ(e.http_status, 503);
  EXPECT_GT(e.retry_after_seconds, 0);
  EXPECT_EQ(from_backend(grpc::Status(grpc::StatusCode::NOT_FOUND, "session.context_id: no context 'x'")).http_status,
            404);
  const json body = error_body(context_too_long(100, 20, 110));
  EXPECT_EQ(body["error"]["code"], "context_length_exceeded");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("110"), std::string::npos);
  EXPECT_NE(body["error"]["message"].get<std::string>().find("120"), std::string::npos);
  EXPECT_TRUE(error_body(unauthorized())["error"]["param"].is_null());
}

}  // namespace
}  // namespace star::http
