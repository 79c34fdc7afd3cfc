// POST routes whose body the shim reads itself, so that --max-body-bytes bounds it whatever its
// framing: httplib 0.11 refuses an oversized Content-Length but reads a chunked body whole. A body
// that grows past the limit is answered 413 and its connection closed without reading the rest.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <httplib.h>

namespace star::http {

using BodyHandler = std::function<void(const httplib::Request&, const std::string& body, httplib::Response&)>;

void post_with_body(httplib::Server& server, const std::string& pattern, size_t max_body_bytes, BodyHandler handler);

}  // namespace star::http
