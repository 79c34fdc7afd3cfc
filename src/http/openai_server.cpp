#include "star/http/openai_server.h"

#include <sys/socket.h>

#include <exception>

#include "star/http/elastic_pool.h"
#include "star/http/http_reply.h"

namespace star::http {
namespace {

constexpr int kListenBacklog = 1024;
constexpr size_t kKeepAliveMaxRequests = 100000;

// The methods a known path answers ("" for an unknown path): httplib says 404 for a known path
// asked with another method, where HTTP (and vLLM) say 405 with Allow.
std::string allowed_methods(const std::string& path) {
  for (const RouteMethods& route : kRoutes) {
    if (path == route.path) return route.allow;
  }
  if (path.starts_with("/v1/models/") && path.size() > std::string("/v1/models/").size()) return "GET";
  return "";
}

}  // namespace

OpenAiServer::OpenAiServer(ShimOptions options, std::unique_ptr<Backend> backend)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      routes_{options_, *backend_, metrics_, connections_} {
  const int threads = options_.threads;
  server_.new_task_queue = [threads] { return new ElasticPool(static_cast<size_t>(threads)); };
  server_.set_payload_max_length(options_.max_body_bytes);
  server_.set_tcp_nodelay(true);  // stream chunks leave at once
  // httplib closes a keep-alive connection after 5 requests by default; clients that pool
  // connections then pay a new connection every 5 requests.
  server_.set_keep_alive_max_count(kKeepAliveMaxRequests);
  // Debian's cpp-httplib is a compiled library that listens with a backlog of 5: a burst of new
  // connections (many clients coming back after 503s) overflowed it and clients saw resets. This
  // hook replaces httplib's default options (SO_REUSEADDR) and keeps the socket for bind().
  server_.set_socket_options([this](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = static_cast<int>(sock);
  });
  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, unauthorized());
    return httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (no route, body too large) get the OpenAI error shape; answers the
  // routes wrote keep theirs.
  server_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                        httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      reply_error(res, body_too_large(options_.max_body_bytes));
    } else if (res.status == 404 && !allowed_methods(req.path).empty()) {
      const std::string allow = allowed_methods(req.path);
      res.set_header("Allow", allow);
      reply_error(res, make_error(405, req.method + " " + req.path + ": method not allowed (" + allow + ")",
                                  "invalid_request_error", "", "method_not_allowed"));
    } else if (res.status == 404) {
      reply_error(res, make_error(404, "No route " + req.method + " " + req.path, "invalid_request_error", "",
                                  "not_found"));
    } else {
      reply_error(res, make_error(res.status, "HTTP " + std::to_string(res.status), "invalid_request_error"));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    reply_error(res, make_error(500, "Internal error: " + what, "server_error"));
  });
  add_completion_routes(server_, routes_);
  add_info_routes(server_, routes_);
}

bool OpenAiServer::authorized(const httplib::Request& req) const {
  if (options_.api_key.empty()) return true;
  const bool guarded = req.path.starts_with("/v1/") || req.path == "/tokenize" || req.path == "/detokenize";
  return !guarded || req.get_header_value("Authorization") == "Bearer " + options_.api_key;
}

Status OpenAiServer::bind() {
  const size_t colon = options_.listen.rfind(':');
  if (colon == std::string::npos) return invalid_argument("--listen: '" + options_.listen + "' is not host:port");
  const std::string host = options_.listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(options_.listen.substr(colon + 1));
  } catch (const std::exception&) {
    return invalid_argument("--listen: '" + options_.listen + "' has no port number");
  }
  port_ = port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) return unavailable("--listen: cannot bind " + options_.listen);
  // Listening again on a listening socket only changes its backlog.
  if (::listen(listen_socket_, kListenBacklog) != 0) {
    return unavailable("--listen: cannot listen on " + options_.listen + " with a backlog of " +
                       std::to_string(kListenBacklog));
  }
  return ok_status();
}

void OpenAiServer::serve() { server_.listen_after_bind(); }

}  // namespace star::http
