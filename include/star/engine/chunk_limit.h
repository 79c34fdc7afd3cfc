// How a Phase 1 job cuts its steps into chunks: by tokens, and by cost.
//
// A chunk's cost counts its matmuls and its attention in one unit, the token-equivalent: a token
// costs 1 for its projections and MLP, plus 1/K for every key it attends, where K
// (`keys_per_token`) is the number of keys whose attention (QK and PV over all heads and layers)
// takes as many FLOPs as one token's matmuls. A limit by tokens alone lets a step's time grow with
// the prefix a long context's later chunks attend (at 16K keys a small-preset token costs 5 at
// K = 4,096), so answers decoding beside it see their inter-token latency grow; a limit by cost
// keeps every step's Phase 1 work about the same.
#pragma once

#include <cstdint>

#include "star/model/llama_config.h"

namespace star {

struct ChunkLimit {
  int64_t max_tokens = 0;      // tokens per chunk; 0: no limit
  int64_t max_cost = 0;        // token-equivalents per chunk; 0: no limit
  int64_t keys_per_token = 0;  // K above; > 0 where max_cost is set

  ChunkLimit() = default;
  // A limit by tokens only (what the engine had before costs; most tests size chunks this way).
  ChunkLimit(int64_t tokens) : max_tokens(tokens) {}  // NOLINT(google-explicit-constructor)
  static ChunkLimit by_tokens_and_cost(int64_t tokens, int64_t cost, int64_t keys_per_token) {
    ChunkLimit l(tokens);
    l.max_cost = cost;
    l.keys_per_token = keys_per_token;
    return l;
  }
};

// K for `config`: 2·(matmul weights of one layer) / (4·heads·head_dim), the logits excluded (Phase 1
// computes none).
int64_t attention_keys_per_token(const LlamaConfig& config);

// Token-equivalents of `rows` tokens whose first attends `keys_before` earlier keys (each later row
// one more, causally), with at most `key_cap` keys per row when key_cap > 0 (a sliding window).
double chunk_cost(int64_t rows, int64_t keys_before, int64_t keys_per_token, int64_t key_cap);

// Rows of the next chunk when `left` tokens of a part remain and its first attends `keys_before`
// keys: the most that `limit` allows, at least one.
int64_t chunk_rows(const ChunkLimit& limit, int64_t left, int64_t keys_before, int64_t key_cap);

}  // namespace star
