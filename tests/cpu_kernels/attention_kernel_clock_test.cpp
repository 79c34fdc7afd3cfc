// The attention kernel clock: off, it books nothing; on, it books every attention_forward call by
// its query rows (prefill > 1, decode = 1), and the Skip Softmax tiles it books add up to what the
// calls counted, which the reference rule (skip_softmax_reference.h) gives independently.
#include <gtest/gtest.h>
#include <omp.h>

#include <random>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/skip_softmax_reference.h"
#include "star/backend/cpu/attention.h"
#include "star/backend/cpu/attention_kernel_clock.h"

namespace star {
namespace {

constexpr float kScale = 0.5f;
constexpr int64_t kHeads = 8, kKvHeads = 2, kDim = 64;

struct Call {
  int64_t nq, nk;
  double scale_factor;
};

// Peaked scores (queries lean towards the direction of the first keys, an attention sink), so that
// Skip Softmax skips some tiles and keeps others.
struct Inputs {
  std::vector<float> q, k, v;
};

Inputs inputs(const Call& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  const std::vector<float> u = testing::random_tensor(kDim, rng);
  in.q = testing::random_tensor(static_cast<size_t>(c.nq * kHeads * kDim), rng);
  in.k = testing::random_tensor(static_cast<size_t>(c.nk * kKvHeads * kDim), rng, -2, 2);
  in.v = testing::random_tensor(static_cast<size_t>(c.nk * kKvHeads * kDim), rng);
  for (size_t i = 0; i < in.q.size(); ++i) in.q[i] += u[i % u.size()];
  for (size_t i = 0; i < static_cast<size_t>(4 * kKvHeads * kDim); ++i) in.k[i] = 1.5f * u[i % u.size()];
  return in;
}

AttentionMask mask_of(const Call& c) { return AttentionMask{true, c.nk - c.nq, {}}; }

// Runs the call and returns the tiles it counted through its own SkipSoftmax pointer.
SkipSoftmaxTiles run(const Call& c, const Inputs& in) {
  std::vector<float> out(static_cast<size_t>(c.nq * kHeads * kDim)), lse(static_cast<size_t>(c.nq * kHeads));
  SkipSoftmaxTiles tiles;
  cpu::attention_forward(in.q.data(), c.nq, in.k.data(), in.v.data(), c.nk, kHeads, kKvHeads, kDim, kScale, mask_of(c),
                         out.data(), lse.data(), SkipSoftmax{c.scale_factor, &tiles});
  return tiles;
}

SkipSoftmaxTiles reference_tiles(const Call& c, const Inputs& in) {
  const cpu::AttentionTiling tiling =
      cpu::attention_tiling(c.nq, c.nk, kHeads, kKvHeads, kDim, omp_get_max_threads());
  return testing::skip_softmax_reference(in.q, c.nq, in.k, in.v, c.nk, kHeads, kKvHeads, kDim, kScale, mask_of(c),
                                         c.scale_factor, tiling)
      .tiles;
}

class AttentionKernelClock : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_threads_ = omp_get_max_threads();
    omp_set_num_threads(2);
  }
  void TearDown() override {
    cpu::set_attention_kernel_clock(false);
    omp_set_num_threads(saved_threads_);
  }

 private:
  int saved_threads_ = 1;
};

void expect_empty(const cpu::AttentionKernelTime& t) {
  EXPECT_EQ(t.calls, 0);
  EXPECT_EQ(t.seconds, 0.0);
  EXPECT_EQ(t.tiles, SkipSoftmaxTiles{});
}

TEST_F(AttentionKernelClock, OffBooksNothing) {
  cpu::set_attention_kernel_clock(false);
  EXPECT_FALSE(cpu::attention_kernel_clock_on());
  for (const Call& c : {Call{300, 900, 100}, Call{1, 3000, 300}}) {
    EXPECT_GT(run(c, inputs(c, 1)).visited, 0) << "the call itself still counts its tiles";
  }
  const cpu::AttentionKernelClockReading r = cpu::read_attention_kernel_clock();
  expect_empty(r.prefill);
  expect_empty(r.decode);
}

TEST_F(AttentionKernelClock, BookingsAddUpToTheCallsTiles) {
  const std::vector<Call> calls = {{300, 900, 100}, {150, 600, 30}, {64, 500, 0},
                                   {1, 3000, 300},  {1, 2000, 1000}, {1, 800, 0}};
  cpu::set_attention_kernel_clock(true);
  EXPECT_TRUE(cpu::attention_kernel_clock_on());
  SkipSoftmaxTiles prefill, decode;
  int64_t prefill_calls = 0, decode_calls = 0;
  uint32_t seed = 7;
  for (const Call& c : calls) {
    const Inputs in = inputs(c, seed++);
    const SkipSoftmaxTiles counted = run(c, in);
    const SkipSoftmaxTiles ref = reference_tiles(c, in);
    ASSERT_EQ(counted, ref) << "nq " << c.nq << " nk " << c.nk << " S " << c.scale_factor;
    if (c.scale_factor > 0) {
      ASSERT_GT(ref.skipped, 0) << "nq " << c.nq << ": the case should skip some tiles";
      ASSERT_LT(ref.skipped, ref.visited);
    }
    (c.nq > 1 ? prefill : decode) += ref;
    ++(c.nq > 1 ? prefill_calls : decode_calls);
  }
  // A call without query rows does no work and is not booked.
  std::vector<float> none;
  cpu::attention_forward(none.data(), 0, none.data(), none.data(), 0, kHeads, kKvHeads, kDim, kScale, {}, none.data(),
                         none.data());

  const cpu::AttentionKernelClockReading r = cpu::read_attention_kernel_clock();
  EXPECT_EQ(r.prefill.calls, prefill_calls);
  EXPECT_EQ(r.decode.calls, decode_calls);
  EXPECT_EQ(r.prefill.tiles, prefill);
  EXPECT_EQ(r.decode.tiles, decode);
  EXPECT_GT(r.prefill.seconds, 0.0);
  EXPECT_GT(r.decode.seconds, 0.0);

  cpu::reset_attention_kernel_clock();
  EXPECT_TRUE(cpu::attention_kernel_clock_on());
  expect_empty(cpu::read_attention_kernel_clock().prefill);
  expect_empty(cpu::read_attention_kernel_clock().decode);

  // Switching the clock off (or on again) clears it too.
  run(calls[0], inputs(calls[0], 1));
  EXPECT_EQ(cpu::read_attention_kernel_clock().prefill.calls, 1);
  cpu::set_attention_kernel_clock(false);
  expect_empty(cpu::read_attention_kernel_clock().prefill);
}

}  // namespace
}  // namespace star
