// Choosing the next token from logits that live on the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/common/status.h"
#include "star/engine/sampler.h"

namespace star::cuda {

// ids[r] = argmax of logits[r, :] for each of the rows ([rows, vocab] device, ids [rows] device):
// the largest logit, ties to the lowest id, NaN never chosen (id 0 when every logit is NaN),
// exactly the greedy choice of star::Sampler.
Status argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* ids,
                   cudaStream_t stream);

// The next token from logits [vocab] on the device, as sampler (built from params) would choose
// it from the same logits on the host. Greedy (temperature 0) runs argmax on the GPU and copies
// back one id. Temperature / top-k / top-p sampling copies the row to the host and draws there
// with `sampler`: one vocab-sized copy per token, small beside a forward pass, and it keeps seeded
// requests identical between the CPU and CUDA backends.
Result<int32_t> next_token(const float* logits, int64_t vocab, const SamplingParams& params,
                           Sampler& sampler, cudaStream_t stream);

}  // namespace star::cuda
