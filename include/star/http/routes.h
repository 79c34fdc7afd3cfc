// The shim's endpoints, registered on an httplib::Server.
//   completion_routes: POST /v1/chat/completions, POST /v1/completions (whole or as SSE)
//   info_routes:       GET /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize
#pragma once

#include <httplib.h>

#include "star/http/backend.h"
#include "star/http/shim_metrics.h"
#include "star/http/shim_options.h"

namespace star::http {

struct RouteContext {
  const ShimOptions& options;
  Backend& backend;
  ShimMetrics& metrics;
};

void add_completion_routes(httplib::Server& server, RouteContext& context);
void add_info_routes(httplib::Server& server, RouteContext& context);

}  // namespace star::http
