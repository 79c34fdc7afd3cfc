// Batched Phase 2 attention on the GPU against the CPU's, over several decoding steps, through a
// two-rank all-gather in one process: a loopback communicator hands this rank's packed (out, lse)
// back as both ranks', so the merge of two equal partials must give the single partial again.
// Run once with a communicator that orders the gather on the model's stream (as NCCL does: no
// host synchronization between the attention, the gather and the merge) and once with one that
// runs on the host (the stream is synchronized before it); both must agree with the CPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/attention/layer_attentions.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/dist/self_communicator.h"

namespace star {
namespace {

using testing::to_device;
using testing::to_host;

// Two ranks in one process: every rank's slot of the all-gather is this rank's bytes.
class LoopbackDeviceCommunicator final : public Communicator {
 public:
  explicit LoopbackDeviceCommunicator(bool ordered) : ordered_(ordered) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  bool orders_on_device_streams() const override { return ordered_; }
  int ordered_calls = 0;
  int blocking_calls = 0;

 private:
  Status do_all_gather(const void* send, size_t bytes, void* recv) override {
    ++blocking_calls;
    return copy_twice(send, bytes, recv, nullptr, true);
  }
  Status do_all_gather_ordered(const void* send, size_t bytes, void* recv, void* stream) override {
    if (!ordered_) return do_all_gather(send, bytes, recv);
    ++ordered_calls;
    return copy_twice(send, bytes, recv, static_cast<cudaStream_t>(stream), false);
  }
  Status do_broadcast(void*, size_t, int) override { return unimplemented("loopback: broadcast"); }
  Status do_send_recv(const void*, size_t, int, void*, size_t, int) override {
    return unimplemented("loopback: send_recv");
  }
  Status do_barrier() override { return ok_status(); }

  static Status copy_twice(const void* send, size_t bytes, void* recv, cudaStream_t stream, bool wait) {
    for (int r = 0; r < 2; ++r) {
      if (Status s = cuda::cuda_status(cudaMemcpyAsync(static_cast<char*>(recv) + r * bytes, send, bytes,
                                                       cudaMemcpyDeviceToDevice, stream),
                                       "loopback all-gather");
          !s.ok()) {
        return s;
      }
    }
    return wait ? cuda::cuda_status(cudaStreamSynchronize(stream), "loopback all-gather") : ok_status();
  }

  bool ordered_;
};

constexpr int64_t kLayers = 2;
const AttentionShape kShape{8, 2, 64};  // Hq, Hkv, d

// K and V already rounded to bf16, so that the CPU's caches and the GPU's hold the same values. The
// CPU's are float32: the GPU multiplies the bf16 values in float32, as the CPU's float32 kernel
// does, where a bf16 CPU cache would take the bf16 pair products (cpu::attention_rounds_to_bf16).
KvCache random_context(int64_t tokens, std::mt19937& rng) {
  KvCache cache(kLayers, kShape.n_kv_heads, kShape.head_dim, KvDType::kF32);
  cache.grow(tokens);
  for (int64_t l = 0; l < kLayers; ++l) {
    const auto k = testing::rounded_to_bf16(testing::random_tensor(tokens * kShape.kv_floats(), rng, -2, 2));
    const auto v = testing::rounded_to_bf16(testing::random_tensor(tokens * kShape.kv_floats(), rng));
    cache.store(l, 0, k.data(), v.data(), tokens);
  }
  return cache;
}

class CudaBatchedAttention : public testing::CudaTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CudaBatchedAttention, GatherAndMergeOnTheStreamMatchTheCpuOverDecodingSteps) {
  const bool ordered = GetParam();
  const std::vector<int64_t> context_tokens{300, 17, 1100, 64};
  const std::vector<int64_t> first_rows{5, 1, 3, 2};
  std::mt19937 rng(11);
  std::vector<KvCache> contexts, own_cpu;
  std::vector<cuda::DeviceKvCache> device_contexts, own_gpu;
  for (int64_t tokens : context_tokens) {
    contexts.push_back(random_context(tokens, rng));
    own_cpu.emplace_back(kLayers, kShape.n_kv_heads, kShape.head_dim, KvDType::kF32);
    auto context = cuda::DeviceKvCache::create(kLayers, kShape.n_kv_heads, kShape.head_dim, 0);
    auto own = cuda::DeviceKvCache::create(kLayers, kShape.n_kv_heads, kShape.head_dim, 0);
    ASSERT_TRUE(context.ok() && own.ok());
    ASSERT_TRUE(context->append_from_host(contexts.back(), nullptr).ok());
    device_contexts.push_back(std::move(*context));
    own_gpu.push_back(std::move(*own));
  }
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  SelfCommunicator self;
  LoopbackDeviceCommunicator loopback(ordered);
  int64_t gathers = 0;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<BatchedShardedQueryAttention::Slot> cpu_slots(contexts.size());
    std::vector<cuda::DeviceBatchedShardedQueryAttention::Slot> gpu_slots(contexts.size());
    int64_t rows = 0;
    for (size_t i = 0; i < contexts.size(); ++i) {
      const int64_t n = step == 0 ? first_rows[i] : 1;
      cpu_slots[i] = {&contexts[i], nullptr, &own_cpu[i], {}, 0.0, n};
      gpu_slots[i] = {&device_contexts[i], nullptr, &own_gpu[i], {}, 0.0, n};
      rows += n;
    }
    BatchedShardedQueryAttention cpu(kShape, self, cpu_slots);
    cuda::DeviceBatchedShardedQueryAttention gpu(kShape, loopback, gpu_slots);
    ASSERT_TRUE(cpu.begin(rows).ok());
    ASSERT_TRUE(gpu.begin(rows, stream).ok());
    for (int64_t l = 0; l < kLayers; ++l) {
      const auto q = testing::random_tensor(rows * kShape.q_floats(), rng, -2, 2);
      const auto k = testing::rounded_to_bf16(testing::random_tensor(rows * kShape.kv_floats(), rng, -2, 2));
      const auto v = testing::rounded_to_bf16(testing::random_tensor(rows * kShape.kv_floats(), rng));
      std::vector<float> expected(q.size());
      ASSERT_TRUE(cpu.attend(l, q.data(), k.data(), v.data(), rows, expected.data()).ok());
      auto dq = to_device(q), dk = to_device(k), dv = to_device(v);
      auto dout = testing::device_zeros<float>(q.size());
      const Status s = gpu.attend(l, dq.data(), dk.data(), dv.data(), rows, dout.data(), stream);
      ASSERT_TRUE(s.ok()) << s.to_string();
      ++gathers;
      auto out = dout.to_host(stream);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      testing::expect_all_near(*out, expected, 2e-5f, 2e-5f, ("layer " + std::to_string(l)).c_str());
    }
    EXPECT_EQ(gpu.floats_sent(), kLayers * rows * kShape.n_heads * (kShape.head_dim + 1));
  }
  EXPECT_EQ(loopback.ordered_calls, ordered ? gathers : 0);
  EXPECT_EQ(loopback.blocking_calls, ordered ? 0 : gathers);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Transports, CudaBatchedAttention, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("StreamOrdered") : std::string("HostBlocking");
                         });

}  // namespace
}  // namespace star
