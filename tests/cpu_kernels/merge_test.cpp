// merge_partials: attention over split key sets merges back to attention over the whole set, and
// the merge stays finite for any gap between partial log-sum-exps.
#include "star/attention/merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "star/attention/merge_math.h"
#include "star/backend/cpu/attention.h"

namespace star {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Attention over keys [0, nk) split at `cuts` into pieces, merged, against the kernel on the whole
// set and the naive reference. The causal offset of a piece starting at key b is offset - b
// (mask has no window: a sink is not shift-invariant).
void expect_split_merge_matches(const std::vector<int64_t>& cuts, int64_t nk, AttentionMask mask) {
  const int64_t nq = 9, hq = 8, hkv = 2, d = 64;
  std::mt19937 rng(static_cast<uint32_t>(cuts.size() * 131 + static_cast<size_t>(nk)));
  const auto q = testing::random_tensor(static_cast<size_t>(nq * hq * d), rng, -2, 2);
  const auto k = testing::random_tensor(static_cast<size_t>(nk * hkv * d), rng, -2, 2);
  const auto v = testing::random_tensor(static_cast<size_t>(nk * hkv * d), rng);
  const float scale = 0.125f;

  std::vector<int64_t> bounds{0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(nk);
  const int64_t parts = static_cast<int64_t>(bounds.size()) - 1;
  std::vector<float> outs(static_cast<size_t>(parts * nq * hq * d));
  std::vector<float> lses(static_cast<size_t>(parts * nq * hq));
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t b = bounds[static_cast<size_t>(p)];
    const int64_t e = bounds[static_cast<size_t>(p + 1)];
    AttentionMask piece = mask;
    piece.causal_offset = mask.causal_offset - b;
    cpu::attention_forward(q.data(), nq, k.data() + b * hkv * d, v.data() + b * hkv * d, e - b, hq,
                           hkv, d, scale, piece, outs.data() + p * nq * hq * d,
                           lses.data() + p * nq * hq);
  }
  std::vector<float> merged(static_cast<size_t>(nq * hq * d));
  std::vector<float> merged_lse(static_cast<size_t>(nq * hq));
  merge_partials(outs.data(), lses.data(), parts, nq, hq, d, merged.data(), merged_lse.data());

  std::vector<float> whole(merged.size());
  std::vector<float> whole_lse(merged_lse.size());
  cpu::attention_forward(q.data(), nq, k.data(), v.data(), nk, hq, hkv, d, scale, mask,
                         whole.data(), whole_lse.data());
  const auto ref = testing::reference_attention(q, nq, k, v, nk, hq, hkv, d, scale, mask);
  for (size_t i = 0; i < merged_lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      EXPECT_EQ(merged_lse[i], -kInf);
      EXPECT_EQ(whole_lse[i], -kInf);
    } else {
      EXPECT_NEAR(merged_lse[i], ref.lse[i], 1e-5 * std::max(1.f, std::abs(ref.lse[i])));
      EXPECT_NEAR(merged_lse[i], whole_lse[i], 1e-5 * std::max(1.f, std::abs(ref.lse[i])));
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    ASSERT_NEAR(merged[i], ref.out[i], 1e-5) << "element " << i;
    ASSERT_NEAR(merged[i], whole[i], 1e-5) << "element " << i;
  }
}

TEST(MergePartials, EvenSplitEqualsWholeSet) { expect_split_merge_matches({100, 200, 300}, 400, {}); }

TEST(MergePartials, UnevenSplitWithEmptyPieces) {
  expect_split_merge_matches({0, 1, 1, 250, 399, 400}, 400, {});
}

TEST(MergePartials, SinglePieceIsIdentity) { expect_split_merge_matches({}, 123, {}); }

TEST(MergePartials, CausalSplitWithPiecesNoQuerySees) {
  // Queries sit at positions 150..158: the last pieces are invisible to every query (lse -inf).
  expect_split_merge_matches({60, 140, 155, 300}, 400, AttentionMask{true, 150, {}});
}

TEST(MergePartials, CausalRowsSeeingNothingStayEmpty) {
  expect_split_merge_matches({3, 10}, 20, AttentionMask{true, -4, {}});
}

// Two partials with lse 0 and lse `gap`: the exact merge in double precision.
void expect_gap_merge(float gap) {
  const int64_t d = 4;
  const std::vector<float> outs{1, 2, 3, 4, -1, -2, -3, -4};  // [P=2, n=1, H=1, d]
  const std::vector<float> lses{0.f, gap};
  std::vector<float> out(d);
  float lse = 0;
  merge_partials(outs.data(), lses.data(), 2, 1, 1, d, out.data(), &lse);
  const double exact_lse = gap + std::log1p(std::exp(-static_cast<double>(gap)));
  const double w_low = std::exp(-exact_lse);
  const double w_high = std::exp(gap - exact_lse);
  ASSERT_TRUE(std::isfinite(lse));
  EXPECT_NEAR(lse, exact_lse, 1e-6 * exact_lse);
  for (int64_t i = 0; i < d; ++i) {
    ASSERT_TRUE(std::isfinite(out[static_cast<size_t>(i)]));
    EXPECT_NEAR(out[static_cast<size_t>(i)], w_low * outs[static_cast<size_t>(i)] + w_high * outs[static_cast<size_t>(d + i)], 1e-6);
  }
}

TEST(MergePartials, LargeGapsStayFinite) {
  for (float gap : {1.f, 20.f, 100.f, 150.f, 1000.f, 1e6f}) {
    SCOPED_TRACE(gap);
    expect_gap_merge(gap);
  }
  // The naive pairwise form lse_a + log(1 + exp(lse_b - lse_a)) overflows already at a gap of 100
  // in float32, which is why the merge shifts by the max.
  volatile float gap = 100.f;
  EXPECT_TRUE(std::isinf(0.f + std::log(1.f + std::exp(gap - 0.f))));
}

TEST(MergePartials, EmptyPartialsContributeNothing) {
  const int64_t d = 3;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Partial 0 is empty and holds garbage; partial 1 is real.
  const std::vector<float> outs{nan, nan, nan, 0.5f, -0.25f, 2.f};
  const std::vector<float> lses{-kInf, 3.5f};
  std::vector<float> out(d);
  float lse = 0;
  merge_partials(outs.data(), lses.data(), 2, 1, 1, d, out.data(), &lse);
  EXPECT_EQ(lse, 3.5f);
  EXPECT_EQ(out, (std::vector<float>{0.5f, -0.25f, 2.f}));
}

TEST(MergePartials, AllEmptyGivesZeroAndMinusInfinity) {
  const int64_t p = 3, n = 2, h = 2, d = 5;
  std::vector<float> outs(static_cast<size_t>(p * n * h * d), 7.f);
  std::vector<float> lses(static_cast<size_t>(p * n * h), -kInf);
  std::vector<float> out(static_cast<size_t>(n * h * d), 9.f);
  std::vector<float> lse(static_cast<size_t>(n * h), 9.f);
  merge_partials(outs.data(), lses.data(), p, n, h, d, out.data(), lse.data());
  for (float x : out) EXPECT_EQ(x, 0.f);
  for (float x : lse) EXPECT_EQ(x, -kInf);
}

// The packed layout one all-gather delivers ([out | lse] per partial) merges to exactly the bits of
// the partial-major layout, empty partials included.
TEST(MergePackedPartials, EqualsMergePartialsBitForBit) {
  const int64_t p = 4, n = 3, h = 4, d = 40;
  const int64_t rows = n * h;
  std::mt19937 rng(17);
  std::vector<float> outs = testing::random_tensor(static_cast<size_t>(p * rows * d), rng, -3, 3);
  std::vector<float> lses = testing::random_tensor(static_cast<size_t>(p * rows), rng, -40, 40);
  for (int64_t r = 0; r < rows; ++r) lses[static_cast<size_t>(2 * rows + r)] = -kInf;  // partial 2: no keys
  lses[5] = -kInf;
  std::vector<float> packed;
  for (int64_t q = 0; q < p; ++q) {
    packed.insert(packed.end(), outs.begin() + q * rows * d, outs.begin() + (q + 1) * rows * d);
    packed.insert(packed.end(), lses.begin() + q * rows, lses.begin() + (q + 1) * rows);
  }
  std::vector<float> out(static_cast<size_t>(rows * d)), lse(static_cast<size_t>(rows));
  std::vector<float> packed_out(out.size()), packed_lse(lse.size());
  merge_partials(outs.data(), lses.data(), p, n, h, d, out.data(), lse.data());
  merge_packed_partials(packed.data(), p, n, h, d, packed_out.data(), packed_lse.data());
  EXPECT_EQ(std::memcmp(out.data(), packed_out.data(), out.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(lse.data(), packed_lse.data(), lse.size() * sizeof(float)), 0);
  EXPECT_NE(out, std::vector<float>(out.size(), 0.f));
}

TEST(MergeMath, MergedLseIsMaxShifted) {
  const float lses[] = {-kInf, 1000.f, -kInf, 1000.f};
  EXPECT_NEAR(merge_math::merged_lse(lses, 4, 1), 1000.f + std::log(2.f), 1e-4);
  EXPECT_EQ(merge_math::merged_lse(lses, 2, 2), -kInf);  // elements 0 and 2
  EXPECT_NEAR(merge_math::merged_lse(lses + 1, 2, 2), 1000.f + std::log(2.f), 1e-4);  // 1 and 3
  EXPECT_EQ(merge_math::partial_weight(-kInf, -kInf), 0.f);
  EXPECT_NEAR(merge_math::partial_weight(10.f, 10.f + std::log(2.f)), 0.5f, 1e-6);
  // Near 1000 the float32 lse itself carries ~6e-5 of rounding; the weights still sum to 1.
  const float total = merge_math::merged_lse(lses + 1, 2, 2);
  EXPECT_NEAR(2 * merge_math::partial_weight(1000.f, total), 1.f, 1e-4);
}

}  // namespace
}  // namespace star
