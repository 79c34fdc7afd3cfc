// The device merge against the CPU merge_partials (both run merge_math.h): random partials with
// empty ones and log-sum-exp gaps far beyond float's exp range, and the packed all-gather layout.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/attention/merge.h"
#include "star/backend/cuda/merge.h"

namespace star {
namespace {

using testing::to_device;
using testing::to_host;

using CudaMerge = testing::CudaTest;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Partials {
  int64_t p, n, h, d;
  std::vector<float> outs, lses;  // [P, n, H, d], [P, n, H]
};

// lses spread over [-200, 200] (gaps up to 400) with every fifth one empty (-inf, garbage out).
Partials random_partials(int64_t p, int64_t n, int64_t h, int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  Partials r{p, n, h, d, testing::random_tensor(static_cast<size_t>(p * n * h * d), rng),
             testing::random_tensor(static_cast<size_t>(p * n * h), rng, -200, 200)};
  for (size_t i = 0; i < r.lses.size(); i += 5) r.lses[i] = -kInf;
  return r;
}

TEST_F(CudaMerge, MatchesCpuMergeWithEmptyPartialsAndLargeGaps) {
  for (int64_t p : {1, 2, 3, 8}) {
    SCOPED_TRACE(p);
    const Partials in = random_partials(p, 5, 6, 128, static_cast<uint32_t>(p));
    std::vector<float> out(static_cast<size_t>(in.n * in.h * in.d)), lse(static_cast<size_t>(in.n * in.h));
    merge_partials(in.outs.data(), in.lses.data(), p, in.n, in.h, in.d, out.data(), lse.data());

    auto douts = to_device(in.outs);
    auto dlses = to_device(in.lses);
    auto dout = testing::device_zeros<float>(out.size());
    auto dlse = testing::device_zeros<float>(lse.size());
    ASSERT_TRUE(cuda::merge_partials(douts.data(), dlses.data(), p, in.n, in.h, in.d, dout.data(),
                                     dlse.data(), nullptr)
                    .ok());
    testing::expect_all_near(to_host(dlse), lse, 0.f, 1e-6f, "lse");
    testing::expect_all_near(to_host(dout), out, 1e-6f, 1e-5f, "out");
  }
}

TEST_F(CudaMerge, PackedLayoutEqualsSeparateArrays) {
  const Partials in = random_partials(4, 3, 8, 64, 11);
  const int64_t outs_per = in.n * in.h * in.d, lses_per = in.n * in.h;
  std::vector<float> packed;
  for (int64_t r = 0; r < in.p; ++r) {
    packed.insert(packed.end(), in.outs.begin() + r * outs_per, in.outs.begin() + (r + 1) * outs_per);
    packed.insert(packed.end(), in.lses.begin() + r * lses_per, in.lses.begin() + (r + 1) * lses_per);
  }
  std::vector<float> out(static_cast<size_t>(outs_per)), lse(static_cast<size_t>(lses_per));
  merge_partials(in.outs.data(), in.lses.data(), in.p, in.n, in.h, in.d, out.data(), lse.data());

  auto dpacked = to_device(packed);
  auto dout = testing::device_zeros<float>(out.size());
  auto dlse = testing::device_zeros<float>(lse.size());
  ASSERT_TRUE(cuda::merge_packed_partials(dpacked.data(), in.p, in.n, in.h, in.d, dout.data(),
                                          dlse.data(), nullptr)
                  .ok());
  testing::expect_all_near(to_host(dlse), lse, 0.f, 1e-6f, "lse");
  testing::expect_all_near(to_host(dout), out, 1e-6f, 1e-5f, "out");
}

TEST_F(CudaMerge, AllEmptyGivesZeroAndMinusInfinity) {
  const int64_t p = 3, n = 2, h = 2, d = 40;
  auto douts = to_device(std::vector<float>(p * n * h * d, std::numeric_limits<float>::quiet_NaN()));
  auto dlses = to_device(std::vector<float>(p * n * h, -kInf));
  auto dout = testing::device_zeros<float>(n * h * d);
  auto dlse = testing::device_zeros<float>(n * h);
  ASSERT_TRUE(cuda::merge_partials(douts.data(), dlses.data(), p, n, h, d, dout.data(), dlse.data(), nullptr).ok());
  for (float x : to_host(dout)) EXPECT_EQ(x, 0.f);
  for (float x : to_host(dlse)) EXPECT_EQ(x, -kInf);
}

}  // namespace
}  // namespace star
