#include "star/eval/ruler_scoring.h"

#include <algorithm>
#include <cctype>

namespace star::eval {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(const std::string& lowered_prediction, const std::string& expected) {
  return lowered_prediction.find(lower(expected)) != std::string::npos;
}

}  // namespace

double score_all(std::string_view prediction, std::span<const std::string> expected) {
  if (expected.empty()) return 0.0;
  const std::string p = lower(prediction);
  const auto hits = std::count_if(expected.begin(), expected.end(), [&p](const std::string& e) { return contains(p, e); });
  return static_cast<double>(hits) / static_cast<double>(expected.size());
}

double score_any(std::string_view prediction, std::span<const std::string> expected) {
  const std::string p = lower(prediction);
  return std::any_of(expected.begin(), expected.end(), [&p](const std::string& e) { return contains(p, e); }) ? 1.0
                                                                                                                : 0.0;
}

double score(Metric metric, std::string_view prediction, std::span<const std::string> expected) {
  return metric == Metric::kAll ? score_all(prediction, expected) : score_any(prediction, expected);
}

}  // namespace star::eval
