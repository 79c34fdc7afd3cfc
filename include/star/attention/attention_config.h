// AttentionConfig: which Phase 1 algorithm runs and with what parameters. One struct for every
// algorithm, read from JSON (configs/*.json) or command-line flags, validated before any work starts.
#pragma once

#include <cstdint>
#include <string>

#include "star/attention/sparse_attention_config.h"

namespace star {

struct AttentionConfig {
  std::string algorithm = "star";  // dense | star | no-anchor | ring | pulsar | streaming

  // Blocking (star, no-anchor, ring, pulsar). 0: ceil(L / ranks), one block per rank.
  int64_t block_size = 0;
  // star: tokens of block 0 prepended to every later block. -1: equal to the block size.
  int64_t anchor_size = -1;
  // star: the anchor's RoPE positions. "first": 0..a-1, the paper's (a rank encodes the anchor once
  // and reuses it for each of its blocks). "adjacent": the a positions just before the rest of each
  // block's pass (its overlap, else the block), so that the block reads the anchor as the text right
  // before it, with no jump in positions; each block's pass then encodes the anchor itself.
  std::string anchor_positions = "first";
  // star, no-anchor, pulsar: each block's Phase 1 pass also encodes the previous block's last
  // boundary_overlap tokens in front of it (after the anchor / summaries) and keeps only its own KV,
  // so that text cut by a block edge is read whole. 0: off (the papers' plans).
  int64_t boundary_overlap = 0;
  // star, no-anchor, pulsar: each inner block edge moves back by at most boundary_snap tokens to
  // just after a token that ends a sentence or a line, so that no sentence of up to that many
  // tokens is cut (no Phase 1 tokens added; the blocks' sizes differ by up to that much). 0: off.
  int64_t boundary_snap = 0;

  // pulsar
  int64_t sink_tokens = 64;
  int64_t chunk_tokens = 32;
  double summary_fraction = 0.125;  // of the block size, when summary_chunks == 0
  int64_t summary_chunks = 0;       // explicit chunk count per block; overrides summary_fraction
  std::string scoring = "max_idf";  // max_idf | tfidf | bm25 | entropy | even
  std::string position_mode = "sparse";  // sparse | contiguous
  bool keep_prefix_kv = false;      // keep sink and summary KV in the shard (experiments)

  // streaming (StreamingLLM baseline)
  int64_t streaming_sink = 1000;
  int64_t streaming_window = 8000;

  // Sparse attention inside the kernels, orthogonal to `algorithm` (sparse_attention_config.h).
  SparseAttentionConfig sparse;
};

}  // namespace star
