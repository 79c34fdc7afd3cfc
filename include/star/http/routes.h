// The shim's endpoints, registered on an httplib::Server.
//   completion_routes: POST /v1/chat/completions, POST /v1/completions (whole or as SSE)
//   info_routes:       GET /v1/models, GET /v1/models/{id}, GET /health, GET /metrics,
//                      POST /tokenize, POST /detokenize
#pragma once

#include <httplib.h>

#include "star/http/backend.h"
#include "star/http/connection_watch.h"
#include "star/http/shim_metrics.h"
#include "star/http/shim_options.h"

namespace star::http {

struct RouteContext {
  const ShimOptions& options;
  Backend& backend;
  ShimMetrics& metrics;
  ConnectionWatch& connections;
};

// Every route with the methods it answers, for the 405 that names them (Allow).
struct RouteMethods {
  const char* path;
  const char* allow;
};
inline constexpr RouteMethods kRoutes[] = {
    {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/tokenize", "POST"},
    {"/detokenize", "POST"},          {"/v1/models", "GET"},       {"/health", "GET"},
    {"/metrics", "GET"},
};

void add_completion_routes(httplib::Server& server, RouteContext& context);
void add_info_routes(httplib::Server& server, RouteContext& context);

}  // namespace star::http
