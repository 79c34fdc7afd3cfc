// Token embedding lookup.
#pragma once

#include <cstdint>

namespace star::cpu {

// out[n, dim] = table[ids[i], :] for each of the n ids; table is [vocab, dim].
// Bounds are the caller's job: it validates every id against [0, vocab) first, where it can report
// which id of which request was bad. Here an out-of-range id only trips a debug assertion.
void embedding_lookup(const float* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n,
                      float* out);

}  // namespace star::cpu
