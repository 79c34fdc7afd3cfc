// The Prometheus text writer: cumulative le buckets, _sum/_count, counters with _total.
#include <gtest/gtest.h>

#include "star/http/prometheus_text.h"
#include "star/http/shim_metrics.h"

namespace star::http {
namespace {

TEST(Histogram, BucketsAreCumulativeAndInclusive) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0}) h.observe(v);
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 5}));  // le=0.1, le=1, +Inf
  EXPECT_DOUBLE_EQ(s.sum, 4.65);
}

TEST(PrometheusText, WritesTheExpositionFormat) {
  Histogram h({0.5});
  h.observe(0.25);
  h.observe(2);
  PrometheusText out;
  out.gauge("star:num_requests_running", "Running.", 3);
  out.counter("star:prompt_tokens", "Prompt tokens.", 42);
  out.histogram("star:e2e_request_latency_seconds", "Latency.", h.snapshot());
  EXPECT_EQ(out.text(),
            "# HELP star:num_requests_running Running.\n"
            "# TYPE star:num_requests_running gauge\n"
            "star:num_requests_running 3\n"
            "# HELP star:prompt_tokens Prompt tokens.\n"
            "# TYPE star:prompt_tokens counter\n"
            "star:prompt_tokens_total 42\n"
            "# HELP star:e2e_request_latency_seconds Latency.\n"
            "# TYPE star:e2e_request_latency_seconds histogram\n"
            "star:e2e_request_latency_seconds_bucket{le=\"0.5\"} 1\n"
            "star:e2e_request_latency_seconds_bucket{le=\"+Inf\"} 2\n"
            "star:e2e_request_latency_seconds_sum 2.25\n"
            "star:e2e_request_latency_seconds_count 2\n");
}

TEST(ShimMetrics, ObservationsMoveTheirSeries) {
  ShimMetrics m;
  RequestObservation o;
  o.prompt_tokens = 10;
  o.generation_tokens = 3;
  o.time_to_first_token = 0.2;
  o.inter_token_latencies = {0.01, 0.02};
  o.e2e_seconds = 0.3;
  o.finish_reason = v1::FINISH_REASON_LENGTH;
  o.sparse_attention.mutable_phase1()->set_visited(100);
  o.sparse_attention.mutable_phase1()->set_skipped(70);
  o.sparse_attention.mutable_phase2()->set_visited(9);
  o.sparse_attention.mutable_phase2()->set_skipped(4);
  m.observe(o);
  m.observe(o);
  const std::string text = m.render(QueueState{1, 2});
  for (const char* line : {"star:num_requests_running 1\n", "star:num_requests_waiting 2\n",
                           "star:prompt_tokens_total 20\n", "star:generation_tokens_total 6\n",
                           "star:request_success_total{finished_reason=\"length\"} 2\n",
                           "star:time_to_first_token_seconds_count 2\n", "star:inter_token_latency_seconds_count 4\n",
                           "star:e2e_request_latency_seconds_count 2\n", "star:phase1_seconds_count 2\n",
                           "star:skip_softmax_visited_tiles_total{phase=\"phase1\"} 200\n",
                           "star:skip_softmax_skipped_tiles_total{phase=\"phase1\"} 140\n",
                           "star:skip_softmax_visited_tiles_total{phase=\"phase2\"} 18\n",
                           "star:skip_softmax_skipped_tiles_total{phase=\"phase2\"} 8\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(m.render(std::nullopt).find("num_requests_running"), std::string::npos);
}

}  // namespace
}  // namespace star::http
