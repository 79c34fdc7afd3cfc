#include "star/http/api_error.h"

namespace star::http {

namespace {

// The field a "<field>: <why>" message starts with; "" when it does not look like one.
std::string leading_field(const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || colon == 0) return "";
  const std::string field = message.substr(0, colon);
  if (field.find(' ') != std::string::npos) return "";
  return field;
}

nlohmann::json null_if_empty(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

}  // namespace

nlohmann::json error_body(const ApiError& e) {
  return {{"error",
           {{"message", e.message}, {"type", e.type}, {"param", null_if_empty(e.param)}, {"code", null_if_empty(e.code)}}}};
}

ApiError make_error(int http_status, std::string message, std::string type, std::string param, std::string code,
                    int retry_after_seconds) {
  ApiError e;
  e.http_status = http_status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.param = std::move(param);
  e.code = std::move(code);
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError invalid_request(std::string param, std::string message) {
  return make_error(400, std::move(message), "invalid_request_error", std::move(param));
}

ApiError invalid_request(const Status& status) { return invalid_request(leading_field(status.message()), status.message()); }

ApiError unauthorized() {
  return make_error(401, "Incorrect or missing API key: send 'Authorization: Bearer <key>'", "authentication_error", "",
                    "invalid_api_key");
}

ApiError model_not_found(const std::string& requested, const std::string& served) {
  return make_error(404, "model: '" + requested + "' does not exist; this server serves '" + served + "'",
                    "invalid_request_error", "model", "model_not_found");
}

ApiError body_too_large(size_t limit_bytes) {
  return make_error(413, "request body: larger than the limit of " + std::to_string(limit_bytes) + " bytes",
                    "invalid_request_error", "", "request_too_large");
}

ApiError context_too_long(int64_t prompt_tokens, int64_t max_tokens, int64_t max_positions, const std::string& param) {
  return make_error(400,
                    "This model's maximum context length is " + std::to_string(max_positions) +
                        " tokens. However, you requested " +
                        // Unsigned: both are >= 0, and their sum may not fit int64.
                        std::to_string(static_cast<uint64_t>(prompt_tokens) + static_cast<uint64_t>(max_tokens)) +
                        " tokens (" +
                        std::to_string(prompt_tokens) + " in the " + param + ", " + std::to_string(max_tokens) +
                        " in the completion).",
                    "invalid_request_error", param, "context_length_exceeded");
}

ApiError max_tokens_over_limit(const std::string& field, const std::string& sent, int64_t limit) {
  return invalid_request(field, field + ": " + sent + " exceeds the server's limit of " + std::to_string(limit) +
                                    " tokens; ask for at most " + std::to_string(limit) + " or leave it out");
}

std::string client_param(const std::string& backend_field, const ClientFields& fields) {
  // The backend field's name up to its first index or member: "tokens.query_ids[3]" -> "tokens.query_ids".
  const std::string name = backend_field.substr(0, backend_field.find('['));
  auto under = [&name](const std::string& prefix) { return name == prefix || name.starts_with(prefix + "."); };
  if (under("tokens.context_ids") || under("text.context")) return fields.context;
  if (under("tokens.query_ids") || under("session.query_ids") || under("session.query_text") || under("text.query")) {
    return fields.query;
  }
  if (under("session")) return "star.context_id";
  if (under("attention")) return fields.attention;
  if (under("sampling")) return name.substr(std::string("sampling.").size());
  if (name == "ids") return "tokens";  // /detokenize
  for (const char* same : {"max_tokens", "stop", "stop_token_ids", "ignore_eos", "request_id"}) {
    if (name == same) return backend_field;
  }
  return "";
}

ApiError from_backend(const grpc::Status& status, const ClientFields& fields) {
  std::string m = status.error_message();
  const std::string field = leading_field(m);
  const std::string param = field.empty() ? "" : client_param(field, fields);
  // The message names the client's field too; one about server configuration stays as it is.
  if (!param.empty()) m = param + m.substr(field.size());
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::OUT_OF_RANGE:
      return invalid_request(param, m);
    case grpc::StatusCode::NOT_FOUND:
      return make_error(404, m, "invalid_request_error", param, "not_found");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return make_error(503, "The server is busy: " + m, "server_error", "", "server_busy", 1);
    case grpc::StatusCode::UNAVAILABLE:
      return make_error(503, "The backend is unavailable: " + m, "server_error", "", "backend_unavailable", 5);
    case grpc::StatusCode::CANCELLED:
      return make_error(503, "The backend cut the request short: " + m, "server_error", "", "backend_unavailable", 5);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return make_error(504, "The backend did not answer in time: " + m, "server_error");
    case grpc::StatusCode::UNAUTHENTICATED:
      return make_error(500, "The backend refused the shim's key (--backend-api-key): " + m, "server_error");
    default:
      return make_error(500, "The backend failed: " + m, "server_error");
  }
}

std::optional<ApiError> whole_answer_error(const grpc::Status& status, const v1::GenerateDone* done,
                                           const ClientFields& fields) {
  if (!status.ok()) return from_backend(status, fields);
  if (done == nullptr) {
    return from_backend(grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without a done event"), fields);
  }
  if (done->finish_reason() == v1::FINISH_REASON_CANCELLED) {
    return from_backend(grpc::Status(grpc::StatusCode::CANCELLED, "the server stopped the generation"), fields);
  }
  return std::nullopt;
}

}  // namespace star::http
