// A small writer of the Prometheus text exposition format (version 0.0.4): Debian packages no
// prometheus-cpp, and the shim needs only counters, gauges and histograms.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace star::http {

// Cumulative buckets with upper bounds `bounds` (ascending) plus +Inf. Thread-safe.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last one +Inf
  double sum_ = 0;
};

class PrometheusText {
 public:
  // `labels` is the text inside the braces, e.g. finished_reason="stop", or empty.
  void gauge(const std::string& name, const std::string& help, double value);
  // Writes `name` + "_total".
  void counter(const std::string& name, const std::string& help, double value, const std::string& labels = "");
  // A counter family with several label sets under one HELP/TYPE.
  void counter_family(const std::string& name, const std::string& help,
                      const std::vector<std::pair<std::string, double>>& labelled_values);
  void histogram(const std::string& name, const std::string& help, const Histogram::Snapshot& h);

  const std::string& text() const { return text_; }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  std::string text_;
};

}  // namespace star::http
