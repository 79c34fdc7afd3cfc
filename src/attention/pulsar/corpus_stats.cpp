#include <algorithm>
#include <cmath>

#include "star/attention/pulsar_summary.h"

namespace star {

CorpusStats::CorpusStats(std::span<const int32_t> context_ids, std::span<const TokenRange> blocks)
    : n_blocks_(static_cast<int64_t>(blocks.size())) {
  std::vector<int32_t> distinct;
  for (const TokenRange& block : blocks) {
    distinct.assign(context_ids.begin() + block.begin, context_ids.begin() + block.end);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (int32_t token : distinct) ++df_[token];
  }
}

int64_t CorpusStats::df(int32_t token) const {
  const auto it = df_.find(token);
  return it == df_.end() ? 0 : it->second;
}

double CorpusStats::idf(int32_t token) const {
  return std::log(static_cast<double>(n_blocks_) / static_cast<double>(std::max<int64_t>(df(token), 1)));
}

double CorpusStats::bm25_idf(int32_t token) const {
  const double d = static_cast<double>(df(token));
  return std::log((static_cast<double>(n_blocks_) - d + 0.5) / (d + 0.5) + 1.0);
}

}  // namespace star
