#include "star/http/request_body.h"

#include "star/http/api_error.h"
#include "star/http/client_socket.h"
#include "star/http/http_reply.h"
#include "star/http/sse.h"

namespace star::http {

namespace {

// Enough for a client to finish the write it is in, read the 413 and stop; a client that keeps
// sending is dropped after it.
constexpr auto kLingerAfterRefusal = std::chrono::seconds(1);
constexpr size_t kLingerBytes = 1u << 20;

}  // namespace

void post_with_body(httplib::Server& server, const std::string& pattern, size_t max_body_bytes, BodyHandler handler) {
  server.Post(pattern, [max_body_bytes, handler = std::move(handler)](const httplib::Request& req,
                                                                      httplib::Response& res,
                                                                      const httplib::ContentReader& read) {
    std::string body;
    bool too_large = false;
    const bool complete = read([&](const char* data, size_t size) {
      if (body.size() + size > max_body_bytes) {
        too_large = true;
        return false;
      }
      body.append(data, size);
      return true;
    });
    // A Content-Length over the limit: httplib has skipped the body and said 413 itself.
    if (res.status == 413) return reply_error(res, body_too_large(max_body_bytes));
    if (too_large) {
      const ApiError error = body_too_large(max_body_bytes);
      if (std::optional<int> fd = client_socket(req)) {
        answer_and_close(*fd, error.http_status, "Payload Too Large", json_text(error_body(error)), kLingerAfterRefusal,
                         kLingerBytes);
      }
      return reply_error(res, error);
    }
    if (!complete) return reply_error(res, invalid_request("body", "body: the request body could not be read"));
    handler(req, body, res);
  });
}

}  // namespace star::http
