#include "star/http/shim_metrics.h"

namespace star::http {

namespace {

// vLLM's buckets for the same measurements.
const std::vector<double> kFirstTokenBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5, 0.75,
                                                1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kInterTokenBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                                0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,  15.0, 20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

}  // namespace

ShimMetrics::ShimMetrics()
    : time_to_first_token_(kFirstTokenBuckets),
      inter_token_latency_(kInterTokenBuckets),
      e2e_latency_(kRequestBuckets),
      phase1_(kFirstTokenBuckets) {}

void ShimMetrics::observe(const RequestObservation& o) {
  prompt_tokens_ += o.prompt_tokens;
  generation_tokens_ += o.generation_tokens;
  switch (o.finish_reason) {
    case v1::FINISH_REASON_LENGTH: ++finished_length_; break;
    case v1::FINISH_REASON_CANCELLED: ++finished_abort_; break;
    default: ++finished_stop_; break;
  }
  if (o.time_to_first_token) time_to_first_token_.observe(*o.time_to_first_token);
  for (double latency : o.inter_token_latencies) inter_token_latency_.observe(latency);
  e2e_latency_.observe(o.e2e_seconds);
  phase1_.observe(o.phase1_seconds);
  const v1::SkipSoftmaxTiles* phases[2] = {&o.sparse_attention.phase1(), &o.sparse_attention.phase2()};
  for (int p = 0; p < 2; ++p) {
    skip_softmax_visited_[p] += phases[p]->visited();
    skip_softmax_skipped_[p] += phases[p]->skipped();
  }
}

std::string ShimMetrics::render(const std::optional<QueueState>& queue) const {
  PrometheusText out;
  if (queue) {
    out.gauge("star:num_requests_running", "Requests the backend is running (from GetServerInfo).",
              static_cast<double>(queue->running));
    out.gauge("star:num_requests_waiting", "Requests waiting in the backend's queue (from GetServerInfo).",
              static_cast<double>(queue->waiting));
  }
  out.counter("star:prompt_tokens", "Prompt tokens of finished requests (context + query).",
              static_cast<double>(prompt_tokens_.load()));
  out.counter("star:generation_tokens", "Generated tokens of finished requests.",
              static_cast<double>(generation_tokens_.load()));
  out.counter_family("star:request_success", "Finished generations by finish reason.",
                     {{"finished_reason=\"stop\"", static_cast<double>(finished_stop_.load())},
                      {"finished_reason=\"length\"", static_cast<double>(finished_length_.load())},
                      {"finished_reason=\"abort\"", static_cast<double>(finished_abort_.load())}});
  out.counter("star:request_errors", "Generation requests answered with an error.",
              static_cast<double>(errors_.load()));
  out.counter_family("star:skip_softmax_visited_tiles", "Attention tiles Skip Softmax voted on, by phase.",
                     {{"phase=\"phase1\"", static_cast<double>(skip_softmax_visited_[0].load())},
                      {"phase=\"phase2\"", static_cast<double>(skip_softmax_visited_[1].load())}});
  out.counter_family("star:skip_softmax_skipped_tiles", "Attention tiles Skip Softmax skipped, by phase.",
                     {{"phase=\"phase1\"", static_cast<double>(skip_softmax_skipped_[0].load())},
                      {"phase=\"phase2\"", static_cast<double>(skip_softmax_skipped_[1].load())}});
  out.histogram("star:time_to_first_token_seconds", "Request arrival until its first generated token.",
                time_to_first_token_.snapshot());
  out.histogram("star:inter_token_latency_seconds", "Time between generated tokens, as the shim receives them.",
                inter_token_latency_.snapshot());
  out.histogram("star:e2e_request_latency_seconds", "Request arrival until its last token.", e2e_latency_.snapshot());
  out.histogram("star:phase1_seconds", "Context encoding time (Star Attention Phase 1) per request.",
                phase1_.snapshot());
  return out.text();
}

}  // namespace star::http
