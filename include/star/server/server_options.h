// ServerOptions: how star-server serves (the command line fills it; tests build it directly).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "star/attention/attention_config.h"

namespace star::server {

struct ServerOptions {
  std::string listen_address = "127.0.0.1:50051";  // port 0: any free port (StarServer::port())
  std::string api_key;                             // empty: no authentication
  std::string tls_cert_file;                       // PEM; both set: TLS, else plaintext
  std::string tls_key_file;
  size_t queue_capacity = 64;                      // accepted requests waiting for the engine
  int64_t context_cache_bytes = int64_t{1} << 30;  // KV budget per rank for CreateContext
  int64_t context_reserve_tokens = 512;            // default CreateContext room for query + answer
  int64_t default_max_tokens = 128;
  AttentionConfig attention;                       // unless a request overrides it
  std::chrono::milliseconds shutdown_timeout{30000};  // accepted work may finish within this
  std::chrono::milliseconds cancel_poll{10};       // how often handlers look for cancellation
};

}  // namespace star::server
