// RocketKV's token budget as its paper counts it. The paper's "256-token budget" is not the tokens
// stage 1 keeps: its reference code (`compress()` in the RocketKV repository) splits one budget T
// between the two stages by the request's length. With L = prompt + max new tokens N:
//
//   c = max(1, L / T)                          overall compression
//   r = min(0.2 + 0.06 log2 c, 0.8)            the share of it stage 1 takes
//   C = max(floor(L / c^r), min(2N, L))        tokens left after stage 1, answer included
//   prompt_budget = C − N                      prompt tokens stage 1 keeps
//   stage 2 attends T / 2 tokens: pages of ceil(sqrt(C / T)) tokens, and the query channels
//   cut by the rest of C / T
//
// A 2,048-token prompt with 48 new tokens and T = 256 keeps 890 prompt tokens in stage 1 and
// attends 128 of them a step, where prompt_budget = 256 keeps 256.
#pragma once

#include <cstdint>

#include "star/attention/sparse_attention_config.h"

namespace star::rocket {

// `config` with prompt_budget, topk, topr and page_size derived from config.token_budget for a
// request of `prompt_tokens` (context and query) and `max_new_tokens` (0 for a context kept for
// later queries), on a model of `head_dim`. Unchanged when token_budget is 0. Two deviations from
// the reference, both forced by the KT cache: the page is the largest power of two not above the
// reference's chunk, and topk counts pages (T / 2 tokens over the page size). prompt_budget stays
// above window_size.
RocketConfig config_for_request(const RocketConfig& config, int64_t prompt_tokens, int64_t max_new_tokens,
                                int64_t head_dim);

}  // namespace star::rocket
