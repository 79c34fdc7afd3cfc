// Warp and block reductions shared by the kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace star::cuda {

inline constexpr unsigned kFullWarp = 0xffffffffu;

__device__ inline float warp_sum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(kFullWarp, value, offset);
  return value;
}

__device__ inline float warp_max(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = fmaxf(value, __shfl_xor_sync(kFullWarp, value, offset));
  }
  return value;
}

// The sum of `value` over a block of kThreads threads, returned to every thread. Call it at most
// once per kernel (it reuses one shared array without a trailing barrier).
template <int kThreads>
__device__ inline float block_sum(float value) {
  static_assert(kThreads % 32 == 0, "whole warps");
  __shared__ float warp_totals[kThreads / 32];
  value = warp_sum(value);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = value;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += warp_totals[w];
  return total;
}

// Blocks for a grid-stride loop over n elements with `threads` threads each: one element per
// thread up to 2^20 blocks, more per thread beyond.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (int64_t{1} << 20) ? int64_t{1} << 20 : blocks));
}

}  // namespace star::cuda
