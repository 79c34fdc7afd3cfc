#include "reduce.cuh"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/rope.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per (token, head, frequency) pair.
__global__ void rope_kernel(float* x, int64_t n_tokens, int64_t n_heads, int64_t half,
                            const int32_t* positions, const float* inv_freq, bool adjacent) {
  const int64_t pairs = n_tokens * n_heads * half;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < pairs;
       idx += stride) {
    const int64_t i = idx % half;
    const int64_t row = idx / half;  // token * n_heads + head
    const float angle = static_cast<float>(positions[row / n_heads]) * inv_freq[i];
    // sinf/cosf, not the __sinf intrinsics: angles reach 1e6 rad at long positions.
    const float sin_a = sinf(angle);
    const float cos_a = cosf(angle);
    float* head = x + row * 2 * half;
    float* first = adjacent ? head + 2 * i : head + i;
    float* second = adjacent ? head + 2 * i + 1 : head + i + half;
    const float a = *first;
    const float b = *second;
    *first = a * cos_a - b * sin_a;
    *second = b * cos_a + a * sin_a;
  }
}

}  // namespace

Status apply_rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                  const int32_t* positions, const float* inv_freq, RopeLayout layout,
                  cudaStream_t stream) {
  if (n_tokens < 0 || n_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0) {
    return invalid_argument("apply_rope: need n_tokens >= 0, n_heads > 0 and an even head_dim > 0, "
                            "got n_tokens " + std::to_string(n_tokens) + ", n_heads " +
                            std::to_string(n_heads) + ", head_dim " + std::to_string(head_dim));
  }
  if (n_tokens == 0) return ok_status();
  const int64_t half = head_dim / 2;
  rope_kernel<<<grid_for(n_tokens * n_heads * half, kThreads), kThreads, 0, stream>>>(
      x, n_tokens, n_heads, half, positions, inv_freq, layout == RopeLayout::kAdjacent);
  return launch_status("rope_kernel");
}

}  // namespace star::cuda
