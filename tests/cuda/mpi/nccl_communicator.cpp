// NcclCommunicator under mpirun (1 and 2 ranks, one GPU each): the collectives on device buffers,
// and Phase 2 end to end on the GPUs: every rank attends to its shard (the query host also to the
// query's own keys, causally), NCCL all-gathers the packed (out, lse), the device merge combines
// them, and every rank must hold attention over the whole key set (the CPU kernel on one host).
// Skips on every rank alike when some host has fewer GPUs than ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "cuda/mpi/gpu_per_rank.h"
#include "star/backend/cpu/attention.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/dist/nccl_communicator.h"

namespace star {
namespace {

using testing::to_device;
using testing::to_host;

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    auto local = host_local_rank();
    ASSERT_TRUE(local.ok()) << local.status().to_string();
    if (const std::string why = testing::missing_gpu_per_rank(local->rank); !why.empty()) GTEST_SKIP() << why;
    auto comm = NcclCommunicator::create_world();
    ASSERT_TRUE(comm.ok()) << comm.status().to_string();
    comm_ = std::move(*comm);
  }

  std::unique_ptr<NcclCommunicator> comm_;
};

std::vector<unsigned char> pattern(int rank, size_t bytes, int salt) {
  std::vector<unsigned char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(rank * 131 + i * 7 + salt);
  return data;
}

TEST_F(Nccl, PicksTheGpuOfItsLocalRank) {
  auto local = host_local_rank();
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(comm_->device(), local->rank);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, comm_->device());
}

TEST_F(Nccl, AllGatherOnDeviceBuffers) {
  for (size_t bytes : {size_t{1}, size_t{13}, size_t{4099}, size_t{1} << 20}) {
    SCOPED_TRACE(bytes);
    auto send = to_device(pattern(comm_->rank(), bytes, 1));
    auto recv = testing::device_zeros<unsigned char>(bytes * static_cast<size_t>(comm_->size()));
    ASSERT_TRUE(comm_->all_gather(send.data(), bytes, recv.data()).ok());
    const auto all = to_host(recv);
    for (int r = 0; r < comm_->size(); ++r) {
      const auto from = all.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * bytes);
      EXPECT_EQ(std::vector<unsigned char>(from, from + static_cast<std::ptrdiff_t>(bytes)), pattern(r, bytes, 1))
          << "rank " << r << "'s slot";
    }
  }
}

// The ordered gather follows a fill enqueued on the caller's stream and precedes a copy enqueued
// after it, with no host synchronization in between (only the final one, before reading).
TEST_F(Nccl, OrderedAllGatherFollowsTheCallersStream) {
  ASSERT_TRUE(comm_->orders_on_device_streams());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const size_t bytes = size_t{1} << 20;
  auto send = testing::device_zeros<unsigned char>(bytes);
  auto recv = testing::device_zeros<unsigned char>(bytes * static_cast<size_t>(comm_->size()));
  std::vector<unsigned char> all(recv.size());
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE(round);
    ASSERT_EQ(cudaMemsetAsync(send.data(), comm_->rank() * 16 + round, bytes, stream), cudaSuccess);
    const Status s = comm_->all_gather_ordered(send.data(), bytes, recv.data(), stream);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(cudaMemcpyAsync(all.data(), recv.data(), all.size(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (int r = 0; r < comm_->size(); ++r) {
      const auto from = all.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * bytes);
      EXPECT_EQ(std::vector<unsigned char>(from, from + static_cast<std::ptrdiff_t>(bytes)),
                std::vector<unsigned char>(bytes, static_cast<unsigned char>(r * 16 + round)))
          << "rank " << r << "'s slot";
    }
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(Nccl, BroadcastFromEveryRoot) {
  for (int root = 0; root < comm_->size(); ++root) {
    auto data = to_device(pattern(comm_->rank(), 4099, root));
    ASSERT_TRUE(comm_->broadcast(data.data(), 4099, root).ok());
    EXPECT_EQ(to_host(data), pattern(root, 4099, root)) << "root " << root;
  }
}

TEST_F(Nccl, SendRecvRingShiftAndBarrier) {
  const int right = (comm_->rank() + 1) % comm_->size();
  const int left = (comm_->rank() + comm_->size() - 1) % comm_->size();
  auto send = to_device(pattern(comm_->rank(), 777, 3));
  auto recv = testing::device_zeros<unsigned char>(777);
  ASSERT_TRUE(comm_->send_recv(send.data(), 777, right, recv.data(), 777, left).ok());
  EXPECT_EQ(to_host(recv), pattern(left, 777, 3));
  EXPECT_TRUE(comm_->barrier().ok());
}

TEST_F(Nccl, Phase2GatherAndMergeEqualsAttentionOverTheWholeKeySet) {
  const int64_t hq = 8, hkv = 2, d = 64, nq = 3, context = 301;
  const int P = comm_->size();
  const int rank = comm_->rank();
  const AttentionShape shape{hq, hkv, d};
  // Every rank draws the same data. Context blocks are contiguous; with two or more ranks rank 0
  // holds none (an empty shard, lse -inf) and the others split the context unevenly.
  std::mt19937 rng(2024);
  const auto q = testing::random_tensor(static_cast<size_t>(nq * hq * d), rng, -2, 2);
  const auto k_all = testing::rounded_to_bf16(
      testing::random_tensor(static_cast<size_t>((context + nq) * hkv * d), rng, -2, 2));
  const auto v_all = testing::rounded_to_bf16(
      testing::random_tensor(static_cast<size_t>((context + nq) * hkv * d), rng));
  const int holders = P == 1 ? 1 : P - 1;
  const int holder = P == 1 ? 0 : rank - 1;
  const int64_t begin = holder < 0 ? 0 : context * holder / holders;
  const int64_t end = holder < 0 ? 0 : context * (holder + 1) / holders;
  const bool query_host = rank == P - 1;

  KvCache host_shard(1, hkv, d);
  const int64_t row = hkv * d;
  host_shard.store(0, host_shard.grow(end - begin), k_all.data() + begin * row, v_all.data() + begin * row,
                   end - begin);
  auto shard = cuda::DeviceKvCache::create(1, hkv, d, 0);
  ASSERT_TRUE(shard.ok());
  ASSERT_TRUE(shard->append_from_host(host_shard, nullptr).ok());

  // The query's own keys and values (the rows after the context).
  const std::vector<float> k_query(k_all.begin() + context * row, k_all.end());
  const std::vector<float> v_query(v_all.begin() + context * row, v_all.end());
  auto dq = to_device(q);
  auto dk = to_device(k_query);
  auto dv = to_device(v_query);
  auto dout = testing::device_zeros<float>(q.size());
  cuda::DeviceShardedQueryAttention phase2(shape, *comm_, *shard, query_host);
  ASSERT_TRUE(phase2.begin(nq, nullptr).ok());
  const Status s = phase2.attend(0, dq.data(), dk.data(), dv.data(), nq, dout.data(), nullptr);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(phase2.floats_sent(), P == 1 ? 0 : nq * hq * (d + 1));  // one rank never gathers

  // Query token i sits at position context + i: it sees the whole context and query keys <= i.
  AttentionMask mask;
  mask.causal = true;
  mask.causal_offset = context;
  std::vector<float> expected(q.size()), expected_lse(static_cast<size_t>(nq * hq));
  cpu::attention_forward(q.data(), nq, k_all.data(), v_all.data(), context + nq, hq, hkv, d,
                         1.f / std::sqrt(static_cast<float>(d)), mask, expected.data(), expected_lse.data());
  testing::expect_all_near(to_host(dout), expected, 2e-5f, 2e-5f, "merged Phase 2 output");
}

}  // namespace
}  // namespace star
