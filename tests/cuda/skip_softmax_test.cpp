// Skip Softmax in the GPU attention kernel: S = 1e-30 is the dense kernel bit for bit (tiles
// counted, none skipped), and with a real threshold the outputs and tile counts equal the CPU tests'
// reference of the rule at the GPU's granularity (32-key tiles, 16-row vote groups). Shapes keep
// nk < 512, where the kernel never splits the keys, so the reference needs no device property.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/skip_softmax_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/backend/cuda/attention.h"

namespace star {
namespace {

using CudaSkipSoftmax = testing::CudaTest;

struct Case {
  std::string name;
  int64_t nq, nk, hq, hkv, d;
  AttentionMask mask;
  double scale_factor;
};

constexpr float kScale = 0.5f;

struct Inputs {
  std::vector<float> q, k, v;
};

// Peaked attention: queries lean towards a direction the first 4 keys point along (as in the CPU test).
Inputs inputs(const Case& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  Inputs in;
  const std::vector<float> u = testing::random_tensor(static_cast<size_t>(c.d), rng);
  in.q = testing::random_tensor(static_cast<size_t>(c.nq * c.hq * c.d), rng);
  in.k = testing::random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng, -2, 2);
  in.v = testing::random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng);
  for (size_t i = 0; i < in.q.size(); ++i) in.q[i] += u[i % u.size()];
  for (size_t i = 0; i < static_cast<size_t>(std::min<int64_t>(c.nk, 4) * c.hkv * c.d); ++i) in.k[i] = 1.5f * u[i % u.size()];
  return in;
}

struct GpuRun {
  std::vector<float> out, lse;
  SkipSoftmaxTiles tiles;
};

GpuRun run_gpu(const Case& c, const Inputs& in, double scale_factor) {
  auto dq = testing::to_device(in.q);
  auto dk = testing::to_device(in.k);
  auto dv = testing::to_device(in.v);
  auto out = testing::device_zeros<float>(static_cast<size_t>(c.nq * c.hq * c.d));
  auto lse = testing::device_zeros<float>(static_cast<size_t>(c.nq * c.hq));
  GpuRun run;
  const Status s = cuda::attention_forward(dq.data(), c.nq, dk.data(), dv.data(), c.nk, c.hq, c.hkv, c.d, kScale,
                                           c.mask, out.data(), lse.data(), nullptr, SkipSoftmax{scale_factor, &run.tiles});
  EXPECT_TRUE(s.ok()) << s.to_string();
  run.out = testing::to_host(out);
  run.lse = testing::to_host(lse);
  return run;
}

AttentionMask causal(int64_t offset, int64_t sink = 0, int64_t window = 0) {
  return AttentionMask{true, offset, AttentionWindow{sink, window}};
}

std::vector<Case> cases() {
  return {
      {"prefill_causal_gqa4", 200, 400, 8, 2, 64, causal(200), 40},
      {"prefill_window", 300, 300, 8, 2, 64, causal(0, 4, 120), 100},
      {"decode_gqa4", 1, 500, 8, 2, 128, causal(499), 200},
      {"no_mask_group_of_3", 40, 480, 6, 2, 32, {}, 100},
  };
}

TEST_F(CudaSkipSoftmax, TinyScaleFactorIsTheDenseKernel) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Inputs in = inputs(c);
    const GpuRun dense = run_gpu(c, in, 0.0);
    const GpuRun tiny = run_gpu(c, in, 1e-30);
    EXPECT_EQ(dense.tiles, SkipSoftmaxTiles{});
    EXPECT_GT(tiny.tiles.visited, 0);
    EXPECT_EQ(tiny.tiles.skipped, 0);
    EXPECT_EQ(std::memcmp(tiny.out.data(), dense.out.data(), dense.out.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(tiny.lse.data(), dense.lse.data(), dense.lse.size() * sizeof(float)), 0);
  }
}

TEST_F(CudaSkipSoftmax, MatchesTheReferenceRule) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Inputs in = inputs(c);
    // The GPU kernel's cut: 16-row blocks over all of a kv head's rows, 32-key tiles, one split.
    const cpu::AttentionTiling tiling{32, c.nk, c.nq, 16};
    const testing::SkipSoftmaxReference ref = testing::skip_softmax_reference(
        in.q, c.nq, in.k, in.v, c.nk, c.hq, c.hkv, c.d, kScale, c.mask, c.scale_factor, tiling);
    ASSERT_GT(ref.closest_vote, 1e-4) << "a vote sits on the threshold; float rounding could flip it";
    ASSERT_GT(ref.tiles.skipped, 0);
    ASSERT_LT(ref.tiles.skipped, ref.tiles.visited);
    const GpuRun run = run_gpu(c, in, c.scale_factor);
    EXPECT_EQ(run.tiles, ref.tiles) << "visited " << run.tiles.visited << " skipped " << run.tiles.skipped;
    testing::expect_all_near(run.out, ref.result.out, 1e-4f, 1e-4f, "out");
  }
}

}  // namespace
}  // namespace star
