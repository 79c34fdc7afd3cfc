// ShimOptions: how star-openai serves (its command line fills it; tests build it directly).
#pragma once

#include <cstddef>
#include <string>

namespace star::http {

struct ShimOptions {
  std::string backend = "127.0.0.1:50051";  // star-server's gRPC address
  std::string backend_api_key;              // sent to star-server when it has --api-key
  bool backend_tls = false;                 // star-server has --tls-cert/--tls-key
  std::string backend_tls_ca;               // PEM file of the CA that signed its certificate; "": the system's roots
  std::string listen = "127.0.0.1:8000";    // host:port; port 0: any free port
  std::string api_key;                      // empty: no authentication on /v1, /tokenize, /detokenize
  size_t max_body_bytes = 8u << 20;         // larger request bodies are answered 413
  int threads = 64;                         // HTTP workers kept ready; more start while all are busy
};

}  // namespace star::http
