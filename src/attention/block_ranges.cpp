#include "star/attention/block_ranges.h"

#include <algorithm>
#include <limits>
#include <string>

namespace star {

TokenRange BlockLayout::shard(int rank) const {
  const BlockRun run = rank_runs.at(static_cast<size_t>(rank));
  if (blocks.empty()) return {0, 0};
  if (run.empty()) {
    const int64_t at = run.first < static_cast<int>(blocks.size()) ? blocks[run.first].begin
                                                                  : blocks.back().end;
    return {at, at};
  }
  return {blocks[run.first].begin, blocks[run.last - 1].end};
}

Result<BlockLayout> split_into_blocks(int64_t context_tokens, int64_t block_size, int n_ranks) {
  if (context_tokens < 0) {
    return invalid_argument("context has " + std::to_string(context_tokens) +
                            " tokens; a plan needs at least 0");
  }
  if (context_tokens > std::numeric_limits<int32_t>::max()) {
    return invalid_argument("context has " + std::to_string(context_tokens) +
                            " tokens; positions are int32, so at most 2147483647");
  }
  if (n_ranks < 1) {
    return invalid_argument("n_ranks = " + std::to_string(n_ranks) + " must be >= 1");
  }
  if (block_size < 0) {
    return invalid_argument("block_size = " + std::to_string(block_size) +
                            " must be >= 0 (0: ceil(L / ranks))");
  }
  if (context_tokens == 0) {
    // No blocks: every rank holds the empty shard [0, 0) and rank 0 hosts the query.
    BlockLayout layout;
    layout.block_size = block_size;
    layout.rank_runs.assign(static_cast<size_t>(n_ranks), BlockRun{});
    return layout;
  }
  const int64_t b = block_size > 0 ? block_size : (context_tokens + n_ranks - 1) / n_ranks;
  const int64_t n = (context_tokens + b - 1) / b;
  if (n > std::numeric_limits<int>::max()) {
    return invalid_argument("block_size = " + std::to_string(block_size) + " splits " +
                            std::to_string(context_tokens) + " tokens into too many blocks");
  }

  BlockLayout layout;
  layout.block_size = b;
  layout.blocks.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    layout.blocks.push_back({i * b, std::min(context_tokens, (i + 1) * b)});
  }
  layout.rank_runs.reserve(static_cast<size_t>(n_ranks));
  for (int r = 0; r < n_ranks; ++r) {
    const int first = static_cast<int>(r * n / n_ranks);
    const int last = static_cast<int>((r + 1) * n / n_ranks);
    layout.rank_runs.push_back({first, last});
    if (first < last && last == n) layout.query_host = r;
  }
  return layout;
}

}  // namespace star
