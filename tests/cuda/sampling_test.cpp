// Device argmax against star::Sampler's greedy choice, and next_token against the host sampler.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/backend/cuda/sampling.h"
#include "star/engine/sampler.h"

namespace star {
namespace {

using testing::to_device;
using testing::to_host;

using CudaSampling = testing::CudaTest;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

TEST_F(CudaSampling, ArgmaxRowsEqualsGreedySampler) {
  const int64_t vocab = 128256;
  std::mt19937 rng(1);
  std::vector<float> logits = testing::random_tensor(static_cast<size_t>(3 * vocab), rng, -10, 10);
  logits[static_cast<size_t>(vocab + 5)] = 50.f;             // row 1: a clear winner early
  logits[static_cast<size_t>(vocab + vocab - 1)] = 50.f;     // ... tied by the last id
  logits[static_cast<size_t>(2 * vocab + 100)] = kNan;       // row 2: NaN is never chosen
  logits[static_cast<size_t>(2 * vocab + 90000)] = 30.f;
  auto dlogits = to_device(logits);
  auto ids = testing::device_zeros<int32_t>(3);
  ASSERT_TRUE(cuda::argmax_rows(dlogits.data(), 3, vocab, ids.data(), nullptr).ok());
  const auto got = to_host(ids);
  for (int r = 0; r < 3; ++r) {
    Sampler greedy(SamplingParams{});
    EXPECT_EQ(got[static_cast<size_t>(r)],
              greedy.sample({logits.data() + r * vocab, static_cast<size_t>(vocab)}))
        << "row " << r;
  }
  EXPECT_EQ(got[1], 5);
  EXPECT_EQ(got[2], 90000);
}

TEST_F(CudaSampling, AllNanRowPicksIdZeroLikeTheSampler) {
  auto dlogits = to_device(std::vector<float>(1000, kNan));
  auto ids = testing::device_zeros<int32_t>(1);
  ASSERT_TRUE(cuda::argmax_rows(dlogits.data(), 1, 1000, ids.data(), nullptr).ok());
  EXPECT_EQ(to_host(ids)[0], 0);
}

TEST_F(CudaSampling, NextTokenFollowsTheSeededHostSampler) {
  const int64_t vocab = 5000;
  std::mt19937 rng(2);
  const auto logits = testing::random_tensor(static_cast<size_t>(vocab), rng, -5, 5);
  auto dlogits = to_device(logits);
  for (const SamplingParams params : {SamplingParams{0.f, 0, 1.f, 0}, SamplingParams{0.8f, 50, 0.9f, 42},
                                      SamplingParams{1.2f, 0, 0.5f, 7}}) {
    Sampler on_device_path(params);
    Sampler on_host(params);
    for (int step = 0; step < 5; ++step) {
      auto id = cuda::next_token(dlogits.data(), vocab, params, on_device_path, nullptr);
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      EXPECT_EQ(*id, on_host.sample(logits)) << "temperature " << params.temperature << ", step " << step;
    }
  }
}

}  // namespace
}  // namespace star
