#include "star/http/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace star::http {

namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  return buffer;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Snapshot s{bounds_, {}, sum_};
  uint64_t running = 0;
  for (uint64_t c : counts_) s.cumulative.push_back(running += c);
  return s;
}

void PrometheusText::header(const std::string& name, const std::string& help, const char* type) {
  text_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::gauge(const std::string& name, const std::string& help, double value) {
  header(name, help, "gauge");
  text_ += name + " " + number(value) + "\n";
}

void PrometheusText::counter(const std::string& name, const std::string& help, double value,
                             const std::string& labels) {
  header(name, help, "counter");
  text_ += name + "_total" + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
}

void PrometheusText::counter_family(const std::string& name, const std::string& help,
                                    const std::vector<std::pair<std::string, double>>& labelled_values) {
  header(name, help, "counter");
  for (const auto& [labels, value] : labelled_values) {
    text_ += name + "_total{" + labels + "} " + number(value) + "\n";
  }
}

void PrometheusText::histogram(const std::string& name, const std::string& help, const Histogram::Snapshot& h) {
  header(name, help, "histogram");
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    text_ += name + "_bucket{le=\"" + number(h.bounds[i]) + "\"} " + std::to_string(h.cumulative[i]) + "\n";
  }
  text_ += name + "_bucket{le=\"+Inf\"} " + std::to_string(h.cumulative.back()) + "\n";
  text_ += name + "_sum " + number(h.sum) + "\n";
  text_ += name + "_count " + std::to_string(h.cumulative.back()) + "\n";
}

}  // namespace star::http
