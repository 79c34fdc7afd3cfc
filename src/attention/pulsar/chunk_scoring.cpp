#include <algorithm>
#include <numeric>

#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

std::vector<int32_t> sorted_tokens(std::span<const int32_t> chunk) {
  std::vector<int32_t> tokens(chunk.begin(), chunk.end());
  std::sort(tokens.begin(), tokens.end());
  return tokens;
}

}  // namespace

std::vector<TokenRange> split_into_chunks(TokenRange region, int64_t chunk_tokens) {
  std::vector<TokenRange> chunks;
  for (int64_t begin = region.begin; begin < region.end; begin += chunk_tokens) {
    chunks.push_back({begin, std::min(region.end, begin + chunk_tokens)});
  }
  return chunks;
}

double max_idf_score(std::span<const int32_t> chunk, const CorpusStats& stats) {
  double best = stats.idf(chunk.front());
  for (int32_t token : chunk) best = std::max(best, stats.idf(token));
  return best;
}

double tfidf_score(std::span<const int32_t> chunk, const CorpusStats& stats) {
  double sum = 0.0;
  for (int32_t token : sorted_tokens(chunk)) sum += stats.idf(token);
  return sum / static_cast<double>(chunk.size());
}

double bm25_score(std::span<const int32_t> chunk, const CorpusStats& stats, double avg_chunk_tokens) {
  constexpr double kK1 = 1.2;
  constexpr double kB = 0.75;
  const double length_norm =
      kK1 * (1.0 - kB + kB * static_cast<double>(chunk.size()) / avg_chunk_tokens);
  const std::vector<int32_t> tokens = sorted_tokens(chunk);
  double score = 0.0;
  for (size_t i = 0; i < tokens.size();) {
    size_t j = i;
    while (j < tokens.size() && tokens[j] == tokens[i]) ++j;
    const double tf = static_cast<double>(j - i);
    score += stats.bm25_idf(tokens[i]) * tf * (kK1 + 1.0) / (tf + length_norm);
    i = j;
  }
  return score;
}

double entropy_score(std::span<const int32_t> chunk) {
  std::vector<int32_t> tokens = sorted_tokens(chunk);
  const auto distinct = std::unique(tokens.begin(), tokens.end()) - tokens.begin();
  return static_cast<double>(distinct) / static_cast<double>(chunk.size());
}

std::vector<size_t> top_k_chunks(std::span<const double> scores, int64_t k) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t keep = std::min(order.size(), static_cast<size_t>(std::max<int64_t>(k, 0)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](size_t a, size_t b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
  order.resize(keep);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int64_t> even_offsets(int64_t region_tokens, int64_t count) {
  count = std::min(count, region_tokens);
  if (count <= 0) return {};
  if (count == 1) return {0};
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) offsets[i] = i * (region_tokens - 1) / (count - 1);
  return offsets;
}

}  // namespace star
