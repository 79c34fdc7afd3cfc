// Shared by the plan builders of star, no-anchor and ring (pulsar takes the edge snapping): the
// block layout of block_ranges.h, and the parts of a BlockPlan that every block-wise algorithm fills
// the same way. A context with fewer blocks than ranks (an empty context included) leaves the
// surplus ranks an empty shard: they run no Phase 1 step of their own, and in Phase 2 their partial
// (log-sum-exp -inf) is exactly neutral.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/attention/block_ranges.h"
#include "star/common/status.h"

namespace star {

// INVALID_ARGUMENT when n_ranks < 1 or block_size < 0. `algorithm` names the caller in messages.
Result<BlockLayout> cut_into_blocks(std::string_view algorithm, int64_t context_tokens, int n_ranks,
                                 int64_t block_size);

// boundary_snap: moves each inner edge of `layout` back to just after the nearest token, at most
// max_shift tokens before it, that ends a sentence or a line (sentence_ends[id] != 0), never so far
// that the block before it empties; an edge with no such token in reach stays where it was. Blocks
// keep their indices and ranks their runs; only the ranges move. max_shift 0: nothing moves. Edges
// before `first_edge` (edge i opens block i) stay: a caller whose pass of block i already reads the
// whole block before it has no cut there to repair.
// FAILED_PRECONDITION when max_shift > 0 and sentence_ends is empty (a caller that passed no table).
Status snap_block_edges(std::string_view algorithm, BlockLayout& layout, std::span<const int32_t> context_ids,
                        std::span<const uint8_t> sentence_ends, int64_t max_shift, size_t first_edge = 1);

// The point in [lowest, at] nearest `at` just after a token that ends a sentence or a line
// (token p − 1 does), or `at` when none in reach does: where snapping moves an edge or an end at
// `at`. Requires a non-empty sentence_ends and 1 <= lowest.
int64_t snap_back(std::span<const int32_t> context_ids, std::span<const uint8_t> sentence_ends, int64_t at,
                  int64_t lowest);

// A plan with blocks, one RankPlan per rank with its shard (no steps yet), the query host (the rank
// with the last block) and query positions starting at L.
BlockPlan plan_with_shards(std::string algorithm, const BlockLayout& layout, int64_t context_tokens);

// One step over the context tokens in `range`, at their global positions.
EncodeStep context_step(EncodeStep::Kind kind, std::span<const int32_t> context_ids,
                        TokenRange range, int block_index);

// Block i's pass with the boundary overlap: the last `overlap` tokens of block i-1, never earlier
// than `not_before` (where the prefix already holds them, e.g. star's anchor), as lead tokens in
// front of block i, all at their global positions. overlap 0 or i == 0: the block alone.
EncodeStep overlapped_block_step(std::span<const int32_t> context_ids, const std::vector<TokenRange>& blocks,
                                 int i, int64_t overlap, int64_t not_before);

// The checks every builder shares: "<algorithm>: n_ranks must be >= 1, got 0".
Status check_rank_count(std::string_view algorithm, int n_ranks);
Status check_block_size(std::string_view algorithm, int64_t block_size);
Status check_boundary_overlap(std::string_view algorithm, int64_t boundary_overlap);

}  // namespace star
