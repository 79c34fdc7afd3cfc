// ApiError: an OpenAI-style error, {"error": {"message", "type", "param", "code"}}, with the HTTP
// status it travels under. Every refusal the shim makes is one of these.
#pragma once

#include <optional>
#include <string>

#include <grpcpp/support/status.h>
#include <nlohmann/json.hpp>

#include "star/common/status.h"
#include "star/v1/star.pb.h"

namespace star::http {

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type = "server_error";
  std::string param;           // the request field at fault; "" writes null
  std::string code;            // "" writes null
  int retry_after_seconds = 0;  // > 0: sent as Retry-After
};

nlohmann::json error_body(const ApiError& error);

ApiError make_error(int http_status, std::string message, std::string type, std::string param = "",
                    std::string code = "", int retry_after_seconds = 0);

// 400 invalid_request_error naming `param`.
ApiError invalid_request(std::string param, std::string message);
// A Status from request parsing ("<field>: <why>"): 400 with the field as param.
ApiError invalid_request(const Status& status);
ApiError unauthorized();
ApiError model_not_found(const std::string& requested, const std::string& served);
ApiError body_too_large(size_t limit_bytes);
// `param`: where the prompt came from ("messages", "prompt").
ApiError context_too_long(int64_t prompt_tokens, int64_t max_tokens, int64_t max_positions,
                          const std::string& param = "messages");
// An explicit max_tokens (or max_completion_tokens, `field`) over the server's --max-tokens-limit;
// `sent` is the value as the client wrote it.
ApiError max_tokens_over_limit(const std::string& field, const std::string& sent, int64_t limit);

// The client's field each field of the backend request came from, so that an error the backend
// names by its own field ("tokens.context_ids: ...") names the client's instead. Backend fields
// with no counterpart here (server configuration) get no param.
struct ClientFields {
  std::string context;    // tokens.context_ids: "star.context" (completions), "messages" (chat)
  std::string query;      // tokens.query_ids, session.query_ids: "prompt", "tokens" or "messages"
  std::string attention;  // "star.attention" when the client sent one; else the server's own
};

// The client's name for `backend_field` (the part of a backend message before ": "), or "".
std::string client_param(const std::string& backend_field, const ClientFields& fields);

// What the backend said, as the client should see it: INVALID_ARGUMENT 400, NOT_FOUND 404,
// RESOURCE_EXHAUSTED, UNAVAILABLE and CANCELLED (a server stopping) 503 with Retry-After,
// DEADLINE_EXCEEDED 504, the rest 500. The field the message starts with becomes the client's.
ApiError from_backend(const grpc::Status& status, const ClientFields& fields = {});

// The error for a non-streamed generation that ended with `status`, `finished` telling whether a
// done event came, and how: an error status, no done event, or a generation the server cut short
// (finish reason cancelled: a shutdown timeout or an admin's Abort) is never a 200.
std::optional<ApiError> whole_answer_error(const grpc::Status& status, const v1::GenerateDone* done,
                                           const ClientFields& fields = {});

}  // namespace star::http
