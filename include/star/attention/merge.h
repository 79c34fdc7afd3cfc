// Merging partial attention results computed over disjoint key sets (Star Attention Phase 2, ring
// attention steps, split-key decoding). The per-element math is in merge_math.h.
#pragma once

#include <cstdint>

namespace star {

// Merge P partial attention results computed over disjoint key sets.
// outs [P, n, H, d] and lses [P, n, H] laid out partial-major; writes out [n, H, d], lse [n, H].
// m = max_p lse_p; lse = m + ln sum_p exp(lse_p - m); out = sum_p exp(lse_p - lse) * out_p.
// A partial with lse = -inf contributes nothing; all -inf gives out 0, lse -inf. float32.
// out and lse must not overlap the inputs.
void merge_partials(const float* outs, const float* lses, int64_t n_partials, int64_t n,
                    int64_t n_heads, int64_t head_dim, float* out, float* lse);
// The same merge over packed partials, as one all-gather delivers them: partial p starts at
// packed + p * n * H * (d + 1) and holds [out n·H·d | lse n·H]. Bit for bit merge_partials.
void merge_packed_partials(const float* packed, int64_t n_partials, int64_t n, int64_t n_heads,
                           int64_t head_dim, float* out, float* lse);

}  // namespace star
