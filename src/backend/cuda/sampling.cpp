#include "star/backend/cuda/sampling.h"

#include <string>
#include <vector>

#include "star/backend/cuda/device_buffer.h"

namespace star::cuda {

Result<int32_t> next_token(const float* logits, int64_t vocab, const SamplingParams& params,
                           Sampler& sampler, cudaStream_t stream) {
  if (vocab <= 0) return invalid_argument("next_token: vocab must be > 0, got " + std::to_string(vocab));
  if (params.temperature == 0.f) {
    Result<DeviceBuffer<int32_t>> id = DeviceBuffer<int32_t>::allocate(1);
    if (!id.ok()) return id.status();
    if (Status s = argmax_rows(logits, 1, vocab, id->data(), stream); !s.ok()) return s;
    int32_t host_id = 0;
    if (Status s = id->copy_to_host({&host_id, 1}, stream); !s.ok()) return s;
    return host_id;
  }
  std::vector<float> host(static_cast<size_t>(vocab));
  if (Status s = cuda_status(cudaMemcpyAsync(host.data(), logits, host.size() * sizeof(float),
                                             cudaMemcpyDeviceToHost, stream),
                             "next_token: copying logits to the host");
      !s.ok()) {
    return s;
  }
  if (Status s = cuda_status(cudaStreamSynchronize(stream), "next_token: waiting for the logits");
      !s.ok()) {
    return s;
  }
  return sampler.sample(host);
}

}  // namespace star::cuda
