// ApiError: an OpenAI-style error, {"error": {"message", "type", "param", "code"}}, with the HTTP
// status it travels under. Every refusal the shim makes is one of these.
#pragma once

#include <string>

#include <grpcpp/support/status.h>
#include <nlohmann/json.hpp>

#include "star/common/status.h"

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
ApiError context_too_long(int64_t prompt_tokens, int64_t max_tokens, int64_t max_positions);
// What the backend said, as the client should see it: INVALID_ARGUMENT 400, NOT_FOUND 404,
// RESOURCE_EXHAUSTED and UNAVAILABLE 503 with Retry-After, DEADLINE_EXCEEDED 504, the rest 500.
ApiError from_backend(const grpc::Status& status);

}  // namespace star::http
