// Backend statuses as the client sees them: HTTP statuses that say whether retrying can help,
// and params that name the client's own fields, never the backend request's.
#include <gtest/gtest.h>

#include "star/http/api_error.h"

namespace star::http {
namespace {

grpc::Status invalid(const std::string& message) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message); }

TEST(ApiErrorParams, BackendFieldsBecomeTheClientsOwn) {
  const ClientFields completion{.context = "star.context", .query = "prompt", .attention = ""};
  const ClientFields chat{.context = "messages", .query = "messages", .attention = "star.attention"};
  ApiError e = from_backend(invalid("tokens.context_ids: 5000 tokens exceed the window"), completion);
  EXPECT_EQ(e.param, "star.context");
  EXPECT_TRUE(e.message.starts_with("star.context: 5000 tokens")) << e.message;
  EXPECT_EQ(from_backend(invalid("tokens.query_ids[2]: 99999 is not a token id"), completion).param, "prompt");
  EXPECT_EQ(from_backend(invalid("tokens.context_ids: too long"), chat).param, "messages");
  EXPECT_EQ(from_backend(grpc::Status(grpc::StatusCode::NOT_FOUND, "session.context_id: no context 'x'"), chat).param,
            "star.context_id");
  EXPECT_EQ(from_backend(invalid("session: 10 context + 5 query exceed"), chat).param, "star.context_id");
  EXPECT_EQ(from_backend(invalid("ids[0]: 99999 is not a token id")).param, "tokens");
  EXPECT_EQ(from_backend(invalid("sampling.temperature: -1 is negative")).param, "temperature");
  EXPECT_EQ(from_backend(invalid("stop_token_ids[0]: 999999 is not a token id")).param, "stop_token_ids[0]");
  // The attention the client sent is star.attention; the server's own configuration is nobody's field.
  EXPECT_EQ(from_backend(invalid("attention.block_size: cuts 975 tokens into 1 block"), chat).param, "star.attention");
  e = from_backend(invalid("attention.block_size: cuts 975 tokens into 1 block"), completion);
  EXPECT_EQ(e.param, "");
  EXPECT_TRUE(e.message.starts_with("attention.block_size")) << "the message still says what failed";
  EXPECT_EQ(from_backend(invalid("engine_state: rank 1 is lost")).param, "");
}

TEST(ApiErrorStatuses, RetryableOnlyWhereRetryingCanHelp) {
  // The server's drain and shutdown timeout: retry elsewhere or later.
  for (grpc::StatusCode code : {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED,
                                grpc::StatusCode::RESOURCE_EXHAUSTED}) {
    const ApiError e = from_backend(grpc::Status(code, "draining"));
    EXPECT_EQ(e.http_status, 503) << code;
    EXPECT_GT(e.retry_after_seconds, 0) << code;
  }
  // A request over --max-request-bytes: retrying the same request can never succeed.
  const ApiError e = from_backend(invalid("request: 9000000 bytes exceed the server's limit of 8388608"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.retry_after_seconds, 0);
}

TEST(ApiErrorStatuses, AWholeAnswerThatEndedBadlyIsNever200) {
  v1::GenerateDone done;
  done.set_finish_reason(v1::FINISH_REASON_LENGTH);
  EXPECT_FALSE(whole_answer_error(grpc::Status::OK, &done).has_value());
  done.set_finish_reason(v1::FINISH_REASON_STOP);
  EXPECT_FALSE(whole_answer_error(grpc::Status::OK, &done).has_value());
  // A done event, then an error status.
  std::optional<ApiError> e = whole_answer_error(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"), &done);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 503);
  // Cut short by the server (shutdown timeout): finish "abort" is not an answer.
  done.set_finish_reason(v1::FINISH_REASON_CANCELLED);
  e = whole_answer_error(grpc::Status::OK, &done);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 503);
  EXPECT_GT(e->retry_after_seconds, 0);
  // No done event at all.
  e = whole_answer_error(grpc::Status::OK, nullptr);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 500);
  e = whole_answer_error(invalid("max_tokens: 5000 exceeds the server's limit of 4096"), nullptr);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "max_tokens");
}

// The request's own field, and the requested total as sent even where it does not fit int64.
TEST(ApiErrorParams, ContextTooLongNamesWhereThePromptCameFrom) {
  const ApiError e = context_too_long(10, INT64_MAX, 4096, "prompt");
  EXPECT_EQ(e.param, "prompt");
  EXPECT_NE(e.message.find("9223372036854775817 tokens"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("10 in the prompt"), std::string::npos) << e.message;
  EXPECT_EQ(context_too_long(10, 5, 12).param, "messages");
}

}  // namespace
}  // namespace star::http
