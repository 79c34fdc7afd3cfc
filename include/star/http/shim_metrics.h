// What the shim measures about every generation it relays, exposed on GET /metrics with names in
// the style of vLLM's (vllm:time_to_first_token_seconds -> star:time_to_first_token_seconds).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "star/http/prometheus_text.h"
#include "star/v1/star.pb.h"

namespace star::http {

// One finished generation, timed by the shim from the moment its HTTP request arrived.
struct RequestObservation {
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  std::optional<double> time_to_first_token;  // unset when no token came
  std::vector<double> inter_token_latencies;  // one per generated token after the first
  double e2e_seconds = 0;
  double phase1_seconds = 0;                  // the backend's Timings
  v1::FinishReason finish_reason = v1::FINISH_REASON_STOP;
  v1::SparseAttentionStats sparse_attention;  // Skip Softmax tiles per phase
};

// The backend's queue, from GetServerInfo; absent when it could not be asked.
struct QueueState {
  int64_t running = 0;
  int64_t waiting = 0;
};

class ShimMetrics {
 public:
  ShimMetrics();
  void observe(const RequestObservation& o);
  // A request that ended in an error before or during generation.
  void observe_error() { ++errors_; }
  std::string render(const std::optional<QueueState>& queue) const;

 private:
  std::atomic<int64_t> prompt_tokens_{0};
  std::atomic<int64_t> generation_tokens_{0};
  std::atomic<int64_t> finished_stop_{0};
  std::atomic<int64_t> finished_length_{0};
  std::atomic<int64_t> finished_abort_{0};
  std::atomic<int64_t> errors_{0};
  // Skip Softmax tiles, [phase 1, phase 2].
  std::atomic<int64_t> skip_softmax_visited_[2] = {0, 0};
  std::atomic<int64_t> skip_softmax_skipped_[2] = {0, 0};
  Histogram time_to_first_token_;
  Histogram inter_token_latency_;
  Histogram e2e_latency_;
  Histogram phase1_;
};

}  // namespace star::http
