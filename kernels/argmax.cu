#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/sampling.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 1024;

// (value, id) beats (best_value, best_id): larger, ties to the lower id; NaN and id -1 (nothing
// seen yet) never win.
__device__ inline bool beats(float value, int32_t id, float best_value, int32_t best_id) {
  if (id < 0 || isnan(value)) return false;
  if (best_id < 0) return true;
  return value > best_value || (value == best_value && id < best_id);
}

// One block per row: a strided scan per thread, then warp shuffles and one pass over the warps.
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const float* logits, int64_t vocab, int32_t* ids) {
  __shared__ float warp_value[kThreads / 32];
  __shared__ int32_t warp_id[kThreads / 32];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  float best_value = 0.f;
  int32_t best_id = -1;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    if (beats(row[i], static_cast<int32_t>(i), best_value, best_id)) {
      best_value = row[i];
      best_id = static_cast<int32_t>(i);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = __shfl_xor_sync(0xffffffffu, best_value, offset);
    const int32_t other_id = __shfl_xor_sync(0xffffffffu, best_id, offset);
    if (beats(other_value, other_id, best_value, best_id)) {
      best_value = other_value;
      best_id = other_id;
    }
  }
  if (threadIdx.x % 32 == 0) {
    warp_value[threadIdx.x / 32] = best_value;
    warp_id[threadIdx.x / 32] = best_id;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) {
      if (beats(warp_value[w], warp_id[w], best_value, best_id)) {
        best_value = warp_value[w];
        best_id = warp_id[w];
      }
    }
    ids[blockIdx.x] = best_id < 0 ? 0 : best_id;
  }
}

}  // namespace

Status argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* ids,
                   cudaStream_t stream) {
  if (rows < 0 || vocab <= 0 || vocab > INT32_MAX) {
    return invalid_argument("argmax_rows: need rows >= 0 and 0 < vocab <= INT32_MAX, got rows " +
                            std::to_string(rows) + ", vocab " + std::to_string(vocab));
  }
  if (rows == 0) return ok_status();
  argmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, ids);
  return launch_status("argmax_kernel");
}

}  // namespace star::cuda
