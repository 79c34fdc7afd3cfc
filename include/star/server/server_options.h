// ServerOptions: how star-server serves (the command line fills it; tests build it directly).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"

namespace star::server {

// What one request may ask for, checked on the handler thread before any work is queued (the
// error names the field, the value and the limit's flag). A request message past
// max_request_bytes is refused with INVALID_ARGUMENT naming its size and the limit; gRPC itself
// refuses one past twice the limit (RESOURCE_EXHAUSTED) before reading it.
struct ServerLimits {
  int64_t max_request_bytes = int64_t{64} << 20;  // one request message
  int64_t max_context_tokens = 0;                 // of a context, after tokenization; 0: the model's positions
  int64_t max_tokens = 4096;                      // the largest max_tokens a request may ask for
  int64_t max_stop_strings = 16;
  int64_t max_stop_string_bytes = 256;            // each
  int64_t max_streams_per_client = 64;            // Generate and CreateContext calls open at once per client address
};

// How the engine loop batches: every step it admits queued requests while fewer than max_num_seqs
// run and, on every rank, the KV bytes reserved by the running ones plus the newcomer's stay within
// kv_cache_bytes. A request reserves at admission what it can ever hold: an inline context's shard
// on each rank, and (query + max_tokens) tokens on its query host; a CreateContext reserves its
// context's shards while its Phase 1 runs. Kept contexts are not counted here: they have their own
// budget (context_cache_bytes), so the KV a rank may hold is the two added, and a request waiting
// for room only ever waits for running requests to end, never for a context to be deleted.
struct SchedulerLimits {
  int64_t max_num_seqs = 256;             // requests running at once (Phase 1 or Phase 2)
  int64_t max_num_batched_tokens = 2048;  // Phase 1 tokens in one step; 0: a whole block per step
  int64_t max_chunk_cost = 0;             // Phase 1 token-equivalents in one step (chunk_limit.h); 0: off
  int64_t kv_cache_bytes = 0;             // per rank, reserved by running requests; 0: no limit
};

// INVALID_ARGUMENT naming the field and its flag when a limit is out of range.
Status check_scheduler_limits(const SchedulerLimits& limits);

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
  ServerLimits limits;
  // Peers whose x-forwarded-for names the client their calls count for (client_streams.h); "*": any.
  // The default trusts a proxy on the same host, such as star-openai.
  std::vector<std::string> forwarded_allow_ips = {"127.0.0.1", "::1"};
  SchedulerLimits scheduler;
  std::chrono::milliseconds shutdown_timeout{30000};  // accepted work may finish within this
  std::chrono::milliseconds cancel_poll{10};       // how often handlers look for cancellation
};

}  // namespace star::server
