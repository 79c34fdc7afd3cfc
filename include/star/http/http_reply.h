// Writing JSON answers and OpenAI-shaped errors into an httplib response.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "star/http/api_error.h"

namespace star::http {

void reply_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void reply_error(httplib::Response& res, const ApiError& error);

// The request body as JSON, or the 400 that says why it is not.
std::optional<ApiError> parse_body(const std::string& body, nlohmann::json& out);

}  // namespace star::http
