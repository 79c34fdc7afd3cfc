// Block layout shared by every blocked plan: n = ceil(L / b) contiguous blocks of b tokens (the last
// one may be shorter; it is never padded), and a contiguous run of blocks per rank.
#pragma once

#include <cstdint>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

// Blocks [first, last) of one rank; empty when the context has fewer blocks than ranks.
struct BlockRun {
  int first = 0;
  int last = 0;
  bool empty() const { return first >= last; }
};

struct BlockLayout {
  int64_t block_size = 0;           // b, after resolving 0 to ceil(L / ranks)
  std::vector<TokenRange> blocks;   // n blocks tiling [0, L)
  std::vector<BlockRun> rank_runs;  // one per rank: rank r holds [floor(r*n/H), floor((r+1)*n/H))
  int query_host = 0;               // the rank holding the last block (0 when there is none)

  // The context tokens rank r holds: its blocks' union, or an empty range at the point where its
  // run would start, so that the ranks' shards tile [0, L) in rank order.
  TokenRange shard(int rank) const;
};

// context_tokens L >= 0, block_size >= 0 (0: ceil(L / n_ranks)), n_ranks >= 1. When there are
// fewer blocks than ranks some ranks get an empty run; an empty context has no blocks at all, every
// shard is [0, 0) and rank 0 hosts the query.
Result<BlockLayout> split_into_blocks(int64_t context_tokens, int64_t block_size, int n_ranks);

}  // namespace star
