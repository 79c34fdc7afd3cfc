#include "star/attention/plans/blocking.h"

#include <algorithm>

namespace star {
namespace {

std::string prefix(std::string_view algorithm) { return std::string(algorithm) + ": "; }

}  // namespace

Status check_rank_count(std::string_view algorithm, int n_ranks) {
  if (n_ranks < 1) {
    return invalid_argument(prefix(algorithm) + "n_ranks must be >= 1, got " +
                            std::to_string(n_ranks));
  }
  return ok_status();
}

Status check_block_size(std::string_view algorithm, int64_t block_size) {
  if (block_size < 0) {
    return invalid_argument(prefix(algorithm) +
                            "block_size must be >= 0 (0: ceil(context_tokens / n_ranks)), got " +
                            std::to_string(block_size));
  }
  return ok_status();
}

Status check_boundary_overlap(std::string_view algorithm, int64_t boundary_overlap) {
  if (boundary_overlap < 0) {
    return invalid_argument(prefix(algorithm) + "boundary_overlap must be >= 0 (0: off), got " +
                            std::to_string(boundary_overlap));
  }
  return ok_status();
}

Status snap_block_edges(std::string_view algorithm, BlockLayout& layout, std::span<const int32_t> context_ids,
                        std::span<const uint8_t> sentence_ends, int64_t max_shift, size_t first_edge) {
  if (max_shift < 0) {
    return invalid_argument(prefix(algorithm) + "boundary_snap must be >= 0 (0: off), got " +
                            std::to_string(max_shift));
  }
  if (max_shift == 0) return ok_status();
  if (sentence_ends.empty()) {
    return failed_precondition(prefix(algorithm) + "boundary_snap = " + std::to_string(max_shift) +
                               " needs the tokenizer's sentence-end table, and this caller passed none");
  }
  std::vector<TokenRange>& blocks = layout.blocks;
  for (size_t i = std::max<size_t>(first_edge, 1); i < blocks.size(); ++i) {
    const int64_t edge = blocks[i].begin;
    // The edge may land anywhere in [lowest, edge]: token edge-1 ending a sentence keeps it.
    const int64_t at = snap_back(context_ids, sentence_ends, edge, std::max(edge - max_shift, blocks[i - 1].begin + 1));
    blocks[i - 1].end = at;
    blocks[i].begin = at;
  }
  return ok_status();
}

int64_t snap_back(std::span<const int32_t> context_ids, std::span<const uint8_t> sentence_ends, int64_t at,
                  int64_t lowest) {
  const auto ends_sentence = [&](int64_t token) {
    const int32_t id = context_ids[static_cast<size_t>(token)];
    return id >= 0 && static_cast<size_t>(id) < sentence_ends.size() && sentence_ends[static_cast<size_t>(id)] != 0;
  };
  for (int64_t p = at; p >= lowest; --p) {
    if (ends_sentence(p - 1)) return p;
  }
  return at;
}

Result<BlockLayout> cut_into_blocks(std::string_view algorithm, int64_t context_tokens, int n_ranks,
                                    int64_t block_size) {
  if (Status s = check_rank_count(algorithm, n_ranks); !s.ok()) return s;
  if (Status s = check_block_size(algorithm, block_size); !s.ok()) return s;
  Result<BlockLayout> layout = split_into_blocks(context_tokens, block_size, n_ranks);
  if (!layout.ok()) {
    return invalid_argument(prefix(algorithm) + std::string(layout.status().message()));
  }
  return layout;
}

BlockPlan plan_with_shards(std::string algorithm, const BlockLayout& layout,
                           int64_t context_tokens) {
  BlockPlan plan;
  plan.algorithm = std::move(algorithm);
  plan.blocks = layout.blocks;
  plan.context_tokens = context_tokens;
  plan.query_position_start = context_tokens;
  const int n_ranks = static_cast<int>(layout.rank_runs.size());
  plan.ranks.resize(static_cast<size_t>(n_ranks));
  for (int r = 0; r < n_ranks; ++r) plan.ranks[static_cast<size_t>(r)].shard = layout.shard(r);
  plan.query_host = layout.query_host;
  return plan;
}

EncodeStep context_step(EncodeStep::Kind kind, std::span<const int32_t> context_ids,
                        TokenRange range, int block_index) {
  EncodeStep step;
  step.kind = kind;
  step.block_index = block_index;
  step.token_ids.assign(context_ids.begin() + range.begin, context_ids.begin() + range.end);
  step.positions.reserve(static_cast<size_t>(range.size()));
  for (int64_t p = range.begin; p < range.end; ++p) {
    step.positions.push_back(static_cast<int32_t>(p));
  }
  return step;
}

EncodeStep overlapped_block_step(std::span<const int32_t> context_ids, const std::vector<TokenRange>& blocks,
                                 int i, int64_t overlap, int64_t not_before) {
  const TokenRange& block = blocks[static_cast<size_t>(i)];
  if (i == 0 || overlap == 0) return context_step(EncodeStep::Kind::kEncodeBlock, context_ids, block, i);
  const TokenRange& previous = blocks[static_cast<size_t>(i - 1)];
  const int64_t lead_begin = std::max({previous.end - overlap, previous.begin, std::min(not_before, previous.end)});
  EncodeStep step = context_step(EncodeStep::Kind::kEncodeBlock, context_ids, {lead_begin, block.end}, i);
  step.lead_tokens = previous.end - lead_begin;
  return step;
}

}  // namespace star
