#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/embedding.h"

namespace star::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token.
__global__ void embedding_kernel(const __nv_bfloat16* table, int64_t vocab, int64_t dim,
                                 const int32_t* ids, float* out) {
  const int64_t id = ids[blockIdx.x];
  float* dst = out + static_cast<int64_t>(blockIdx.x) * dim;
  const bool known = id >= 0 && id < vocab;
  const __nv_bfloat16* src = table + (known ? id : 0) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) dst[i] = known ? __bfloat162float(src[i]) : 0.f;
}

}  // namespace

Status embedding_lookup(const __nv_bfloat16* table, int64_t vocab, int64_t dim, const int32_t* ids,
                        int64_t n, float* out, cudaStream_t stream) {
  if (n < 0 || dim <= 0 || vocab <= 0) {
    return invalid_argument("embedding_lookup: need n >= 0, dim > 0 and vocab > 0, got n " +
                            std::to_string(n) + ", dim " + std::to_string(dim) + ", vocab " +
                            std::to_string(vocab));
  }
  if (n == 0) return ok_status();
  embedding_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(table, vocab, dim, ids, out);
  return launch_status("embedding_kernel");
}

}  // namespace star::cuda
