// Token embedding lookup.
#pragma once

#include <cstdint>

#include "star/model/weight_tensor.h"

namespace star::cpu {

// out[n, dim] = table[ids[i], :] as float32 for each of the n ids; table is [vocab, dim] of any
// stored type, and only the looked-up rows are widened.
// Bounds are the caller's job: it validates every id against [0, vocab) first, where it can report
// which id of which request was bad. Here an out-of-range id only trips a debug assertion.
void embedding_lookup(const WeightTensor& table, const int32_t* ids, int64_t n, float* out);

}  // namespace star::cpu
