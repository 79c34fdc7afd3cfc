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
  EXPECT_EQ(refused_field(Endpoint::kChat,
                          chat({{"star", {{"attention", {{"sparse_attention", {{"algorithm", "rocket"}, {"topk", 0}}}}}}}})),
            "star.attention.sparse_attention.topk");
  EXPECT_EQ(refused_field(Endpoint::kChat, chat({{"star", {{"attention", {{"sparse_attention",
                                                                          {{"algorithm", "skip_softmax"},
                                                                           {"threshold_scale_factor", {{"decode", -1}}}}}}}}}})),
            "star.attention.sparse_attention.threshold_scale_factor.decode");
  EXPECT_EQ(refused_field(Endpoint::kChat,
                          chat({{"star", {{"attention", {{"sparse_attention", {{"algorithm", "dsa"}}}}}}}})),
            "star.attention.sparse_attention.algorithm");
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

// Fields the engine cannot honour are refused by name; their neutral values ask for nothing and
// pass, as vLLM accepts them.
TEST(OpenAiRequest, UnhonouredFieldsAreRefusedUnlessNeutral) {
  const std::vector<std::pair<std::string, json>> refused = {
      {"response_format", {{"type", "json_object"}}},
      {"presence_penalty", 0.5},
      {"frequency_penalty", -1},
      {"repetition_penalty", 1.2},
      {"logit_bias", {{"50256", -100}}},
      {"best_of", 2},
      {"suffix", "tail"},
      {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
      {"tool_choice", "required"},
      {"top_logprobs", 2},
  };
  for (const auto& [field, value] : refused) {
    EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", "p"}, {field, value}}), field)
        << field << " = " << value.dump();
  }
  const json neutral = {{"response_format", {{"type", "text"}}},
                        {"presence_penalty", 0},
                        {"frequency_penalty", 0.0},
                        {"repetition_penalty", 1.0},
                        {"logit_bias", json::object()},
                        {"best_of", 1},
                        {"n", 1},
                        {"suffix", ""},
                        {"tools", json::array()},
                        {"tool_choice", "none"},
                        {"logprobs", false},
                        {"echo", false},
                        {"user", "someone"}};
  json body = {{"model", "m"}, {"prompt", "p"}};
  body.update(neutral);
  EXPECT_EQ(refused_field(Endpoint::kCompletions, body), "");
}

TEST(OpenAiRequest, TokenIdPromptsAreUsedAsGiven) {
  for (const json& prompt : {json{1, 2, 3}, json{{1, 2, 3}}}) {
    Result<OpenAiRequest> r = parse_openai_request(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", prompt}});
    ASSERT_TRUE(r.ok()) << prompt.dump() << ": " << r.status().to_string();
    ASSERT_TRUE(r->prompt_ids.has_value());
    EXPECT_EQ(*r->prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  }
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", json::array()}}), "prompt");
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", {-1}}}), "prompt");
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", {{1}, {2}}}}), "prompt");
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", {json::array()}}}), "prompt");
}

// 2^63 does not fit int64: it stays the value sent, for the error that names the limit.
TEST(OpenAiRequest, HugeMaxTokensKeepsTheValueSent) {
  Result<OpenAiRequest> r = parse_openai_request(
      Endpoint::kCompletions, json::parse(R"({"model": "m", "prompt": "p", "max_tokens": 9223372036854775808})"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->max_tokens.has_value());
  EXPECT_EQ(*r->max_tokens, uint64_t{1} << 63);
  EXPECT_EQ(r->max_tokens_field, "max_tokens");
  const ApiError e = max_tokens_over_limit(r->max_tokens_field, std::to_string(*r->max_tokens), 4096);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_NE(e.message.find("9223372036854775808"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("4096"), std::string::npos) << e.message;
  EXPECT_EQ(refused_field(Endpoint::kCompletions, json{{"model", "m"}, {"prompt", "p"}, {"max_tokens", -5}}),
            "max_tokens");
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
