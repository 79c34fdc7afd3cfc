// BlockPlan: what Phase 1 does, as data. Every algorithm (dense, star, no-anchor, ring, pulsar,
// streaming) is a function from (context ids, rank count, parameters) to a BlockPlan; one executor
// runs any plan, and Phase 2 reads only `query_host`, `query_position_start` and `window`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace star {

// A contiguous run [begin, end) of context tokens.
struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const TokenRange&) const = default;
};

// Sink + sliding window (StreamingLLM): a token sees keys [0, sink) and its last `window` keys.
// window == 0 means unbounded (ordinary causal attention).
struct AttentionWindow {
  int64_t sink = 0;
  int64_t window = 0;
  bool bounded() const { return window > 0; }
};

// One causal forward pass of Phase 1 on one rank.
//   kExtendPrefix: tokens attend to the rank's prefix KV (anchor, sink, summaries) so far and
//                  causally to themselves; their KV is appended to the prefix.
//   kEncodeBlock:  tokens attend to the whole prefix KV and causally to themselves; their KV is
//                  appended to the rank's shard.
//   kRingSegment:  the rank's segment attends to every earlier rank's segment, whose KV travels
//                  around the ring once per layer, and causally to itself (exact).
struct EncodeStep {
  enum class Kind { kExtendPrefix, kEncodeBlock, kRingSegment };
  Kind kind = Kind::kEncodeBlock;
  std::vector<int32_t> token_ids;
  std::vector<int32_t> positions;  // RoPE position of each token (explicit: gaps allowed)
  int block_index = -1;            // for kEncodeBlock / kRingSegment, the (first) block encoded
  // kEncodeBlock: the first lead_tokens tokens are the previous block's tail (boundary_overlap).
  // They extend the prefix for this pass only; their KV is not kept.
  int64_t lead_tokens = 0;
};

struct RankPlan {
  std::vector<EncodeStep> steps;  // run in order
  TokenRange shard;               // context tokens whose KV this rank holds after Phase 1
  bool keep_prefix_kv = false;    // experiments: keep prefix KV in the shard too (pulsar switch)
};

struct BlockPlan {
  std::string algorithm;              // "dense", "star", ...
  std::vector<TokenRange> blocks;     // the context's blocks, in order
  std::vector<RankPlan> ranks;        // one per rank
  int query_host = 0;                 // the rank holding the last block
  int64_t query_position_start = 0;   // RoPE position of the first query token
  AttentionWindow window;             // applied in Phase 1 and in decoding
  int64_t context_tokens = 0;

  // The longest single pass any rank runs (prefix + block), the Phase 1 critical path in tokens.
  int64_t longest_pass_tokens() const;
};

}  // namespace star
