// Server-sent events as the OpenAI streaming API frames them: one "data: {json}\n\n" event per
// chunk and a final "data: [DONE]\n\n".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace star::http {

inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// JSON on one line (newlines inside strings are escaped); invalid UTF-8 becomes U+FFFD instead of
// throwing.
inline std::string json_text(const nlohmann::json& data) {
  return data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One event is one data field.
inline std::string sse_event(const nlohmann::json& data) { return "data: " + json_text(data) + "\n\n"; }

}  // namespace star::http
