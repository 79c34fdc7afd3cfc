#include "star/http/http_reply.h"

#include "star/http/sse.h"

namespace star::http {

void reply_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  // With the charset, cpp-httplib leaves the body uncompressed (it compresses exactly
  // "application/json"): answers are small, and some clients' brotli decoders fail on them.
  res.set_content(json_text(body), "application/json; charset=utf-8");
}

void reply_error(httplib::Response& res, const ApiError& error) {
  if (error.retry_after_seconds > 0) res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  reply_json(res, error_body(error), error.http_status);
}

std::optional<ApiError> parse_body(const std::string& body, nlohmann::json& out) {
  out = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return invalid_request("body", "body: not valid JSON");
  if (!out.is_object()) return invalid_request("body", "body: must be a JSON object");
  return std::nullopt;
}

}  // namespace star::http
