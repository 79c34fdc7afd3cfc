// Token embedding lookup from a bf16 table on the GPU.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"

namespace star::cuda {

// out[n, dim] (float32) = table[ids[i], :] (bf16, [vocab, dim]) for each of the n ids.
// Device pointers. As on the CPU, the caller validates ids against [0, vocab) where it can name
// the bad one; the kernel writes a row of zeros for an id outside it instead of reading past the
// table.
Status embedding_lookup(const __nv_bfloat16* table, int64_t vocab, int64_t dim, const int32_t* ids,
                        int64_t n, float* out, cudaStream_t stream);

}  // namespace star::cuda
