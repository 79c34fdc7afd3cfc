// OpenAiServer: the OpenAI-compatible HTTP front of a star-server. It holds the HTTP server, the
// gRPC backend connection and the metrics; every route lives in routes.h.
#pragma once

#include <memory>

#include <httplib.h>

#include "star/common/status.h"
#include "star/http/backend.h"
#include "star/http/connection_watch.h"
#include "star/http/routes.h"
#include "star/http/shim_metrics.h"
#include "star/http/shim_options.h"

namespace star::http {

class OpenAiServer {
 public:
  OpenAiServer(ShimOptions options, std::unique_ptr<Backend> backend);

  // Binds options.listen; the error names the address.
  Status bind();
  int port() const { return port_; }
  // Serves until stop() (from any thread).
  void serve();
  void stop() { server_.stop(); }

 private:
  // 401 for /v1, /tokenize and /detokenize without the key; /health and /metrics stay open.
  bool authorized(const httplib::Request& req) const;

  const ShimOptions options_;
  std::unique_ptr<Backend> backend_;
  ShimMetrics metrics_;
  ConnectionWatch connections_;
  RouteContext routes_;
  httplib::Server server_;
  int port_ = 0;
  int listen_socket_ = -1;  // kept by the socket-options hook, so that bind() can widen the backlog
};

}  // namespace star::http
