#include "star/attention/merge_math.h"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/merge.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

// One warp per (token, head) row; lanes split the head dimension. Partial p's row starts at
// outs + p * out_stride + row * d and its lse is lses[p * lse_stride + row]. Same order of
// operations as the CPU merge_partials.
__global__ void merge_kernel(const float* outs, int64_t out_stride, const float* lses,
                             int64_t lse_stride, int64_t n_partials, int64_t rows, int64_t head_dim,
                             float* out, float* lse) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const float total = merge_math::merged_lse(lses + row, n_partials, lse_stride);
  if (lane == 0) lse[row] = total;
  for (int64_t i = lane; i < head_dim; i += 32) {
    float acc = 0.f;
    for (int64_t p = 0; p < n_partials; ++p) {
      const float w = merge_math::partial_weight(lses[p * lse_stride + row], total);
      if (w != 0.f) acc += w * outs[p * out_stride + row * head_dim + i];
    }
    out[row * head_dim + i] = acc;
  }
}

Status launch_merge(const float* outs, int64_t out_stride, const float* lses, int64_t lse_stride,
                    int64_t n_partials, int64_t n, int64_t n_heads, int64_t head_dim, float* out,
                    float* lse, cudaStream_t stream) {
  if (n_partials < 0 || n < 0 || n_heads <= 0 || head_dim <= 0) {
    return invalid_argument("merge_partials: need n_partials >= 0, n >= 0, n_heads > 0 and "
                            "head_dim > 0, got " + std::to_string(n_partials) + ", " +
                            std::to_string(n) + ", " + std::to_string(n_heads) + ", " +
                            std::to_string(head_dim));
  }
  const int64_t rows = n * n_heads;
  if (rows == 0) return ok_status();
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  merge_kernel<<<blocks, kThreads, 0, stream>>>(outs, out_stride, lses, lse_stride, n_partials,
                                                rows, head_dim, out, lse);
  return launch_status("merge_kernel");
}

}  // namespace

Status merge_partials(const float* outs, const float* lses, int64_t n_partials, int64_t n,
                      int64_t n_heads, int64_t head_dim, float* out, float* lse,
                      cudaStream_t stream) {
  return launch_merge(outs, n * n_heads * head_dim, lses, n * n_heads, n_partials, n, n_heads,
                      head_dim, out, lse, stream);
}

Status merge_packed_partials(const float* packed, int64_t n_partials, int64_t n, int64_t n_heads,
                             int64_t head_dim, float* out, float* lse, cudaStream_t stream) {
  const int64_t per_partial = n * n_heads * (head_dim + 1);
  return launch_merge(packed, per_partial, packed + n * n_heads * head_dim, per_partial, n_partials,
                      n, n_heads, head_dim, out, lse, stream);
}

}  // namespace star::cuda
