// The CUDA backend's attention primitives, the operations the situations of
// star/attention/attention_situations.h are written over: grow and store a bf16 DeviceKvCache,
// attend to a run of its rows (cuda::attention_forward), merge partials on the device, all-gather
// partials. Work is enqueued on the stream each call carries; none of them waits for it, but for an
// all-gather over a communicator that runs on the host.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "star/attention/attention_shape.h"
#include "star/backend/cpu/attention.h"
#include "star/backend/cuda/device_buffer.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star::cuda {

struct AttentionPrimitives {
  using Cache = DeviceKvCache;
  using Floats = DeviceBuffer<float>;
  using Context = cudaStream_t;
  // No attend_shared: a decode step's launches, not its reads of the cache, bound it on the device.
  static constexpr bool kSharesKeyReads = false;

  static Result<int64_t> grow(Cache& cache, int64_t n, Context stream);
  // Rows [first, first + n) of one layer = k, v rounded to bf16.
  static Status store(Cache& cache, int64_t layer, int64_t first, const float* k, const float* v, int64_t n,
                      Context stream);
  static Status attend(const AttentionShape& shape, const float* q, int64_t n, const Cache& cache, int64_t layer,
                       int64_t first, int64_t rows, const AttentionMask& mask, float* out, float* lse,
                       const SkipSoftmax& skip, Context stream);
  static Status merge(const float* outs, const float* lses, int64_t partials, int64_t n, const AttentionShape& shape,
                      float* out, float* lse, Context stream);
  static Status merge_packed(const float* packed, int64_t partials, int64_t n, const AttentionShape& shape,
                             float* out, float* lse, Context stream);
  // Grows the buffer to hold at least `count` floats (contents not kept).
  static Status reserve(Floats& floats, int64_t count);
  static float* data(Floats& floats) { return floats.data(); }
  static Status copy(float* dst, const float* src, int64_t count, Context stream);
  // recv = every rank's `count` floats of send. Ordered on the stream where comm runs on device
  // streams (NCCL); otherwise (a CUDA-aware host transport) the stream is synchronized first, since
  // such a transport reads send when called.
  static Status all_gather(Communicator& comm, const float* send, int64_t count, float* recv, Context stream);
};

}  // namespace star::cuda
