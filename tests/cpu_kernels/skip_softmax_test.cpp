// Skip Softmax in attention_forward: outputs and skip counts equal a plain reference of the rule
// (skip_softmax_reference.h) with masks, windows, GQA and decode key splits; S = 0 and S = 1e-30
// are bit for bit the dense kernel; lambda >= 1 skips nothing.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/skip_softmax_reference.h"
#include "star/backend/cpu/attention.h"
#include "star/model/kv_dtype.h"

namespace star {
namespace {

struct Case {
  std::string name;
  int64_t nq, nk, n_heads, n_kv_heads, head_dim;
  AttentionMask mask;
  double scale_factor;  // S; with these peaked scores every case skips some tiles and keeps others
  int threads = 2;  // more threads than tasks split the keys
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

AttentionMask causal(int64_t offset, int64_t sink = 0, int64_t window = 0) {
  return AttentionMask{true, offset, AttentionWindow{sink, window}};
}

struct Inputs {
  std::vector<float> q, k, v;
};

// Peaked attention, as in trained models: every query leans towards a shared direction u and the
// first kSinkKeys keys point along it (an attention sink), so later tiles often fall far below the
// running max. Uniform random inputs would almost never have a whole vote group skip.
constexpr int64_t kSinkKeys = 4;

Inputs inputs(const Case& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  Inputs in;
  const std::vector<float> u = testing::random_tensor(static_cast<size_t>(c.head_dim), rng);
  in.q = testing::random_tensor(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), rng);
  in.k = testing::random_tensor(static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim), rng, -2, 2);
  in.v = testing::random_tensor(static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim), rng);
  for (size_t i = 0; i < in.q.size(); ++i) in.q[i] += u[i % u.size()];
  for (size_t i = 0; i < static_cast<size_t>(std::min(c.nk, kSinkKeys) * c.n_kv_heads * c.head_dim); ++i) {
    in.k[i] = 1.5f * u[i % u.size()];
  }
  return in;
}

constexpr float kScale = 0.5f;

struct KernelRun {
  testing::AttentionResult result;
  SkipSoftmaxTiles tiles;
};

KernelRun run_kernel(const Case& c, const Inputs& in, double scale_factor) {
  KernelRun run{{std::vector<float>(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), 123.f),
           std::vector<float>(static_cast<size_t>(c.nq * c.n_heads), 123.f)},
          {}};
  cpu::attention_forward(in.q.data(), c.nq, in.k.data(), in.v.data(), c.nk, c.n_heads, c.n_kv_heads, c.head_dim,
                         kScale, c.mask, run.result.out.data(), run.result.lse.data(),
                         SkipSoftmax{scale_factor, &run.tiles});
  return run;
}

std::vector<Case> cases() {
  return {
      {"prefill_causal_mha", 200, 200, 4, 4, 64, causal(0), 30},
      {"prefill_causal_gqa4", 150, 600, 8, 2, 64, causal(450), 30},
      {"prefill_group_of_3", 100, 400, 6, 2, 32, causal(300), 300},
      {"prefill_no_mask", 64, 500, 4, 1, 64, {}, 30},
      {"prefill_window_sink", 300, 300, 8, 2, 64, causal(0, 4, 120), 100},
      {"prefill_window_offset", 40, 900, 4, 2, 128, causal(860, 10, 300), 30},
      {"decode_causal_gqa4", 1, 3000, 8, 2, 64, causal(2999), 300},
      {"decode_window", 1, 2000, 4, 1, 64, causal(1999, 16, 900), 1000},
      {"decode_split_4_threads", 1, 4000, 8, 1, 64, causal(3999), 300, 4},
      {"decode_split_8_threads", 1, 5000, 4, 2, 128, {}, 100, 8},
      {"short_query_split", 3, 2500, 4, 2, 64, causal(2497, 8, 1500), 1000, 8},
      {"decode_row_major_d8", 1, 1500, 4, 4, 8, causal(1499), 1000},
  };
}

class SkipSoftmaxKernel : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    saved_threads_ = omp_get_max_threads();
    omp_set_num_threads(GetParam().threads);
  }
  void TearDown() override { omp_set_num_threads(saved_threads_); }

 private:
  int saved_threads_ = 1;
};

TEST_P(SkipSoftmaxKernel, MatchesTheReferenceRule) {
  const Case& c = GetParam();
  const Inputs in = inputs(c);
  const cpu::AttentionTiling tiling =
      cpu::attention_tiling(c.nq, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, omp_get_max_threads());
  const testing::SkipSoftmaxReference ref = testing::skip_softmax_reference(
      in.q, c.nq, in.k, in.v, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, kScale, c.mask, c.scale_factor, tiling);
  if (c.threads > 2) ASSERT_LT(tiling.split_keys, c.nk) << "the case is meant to split the keys";
  ASSERT_GT(ref.closest_vote, 1e-4) << "a vote sits on the threshold; float rounding could flip it";
  // The case exercises the rule: some tiles skipped, some kept.
  ASSERT_GT(ref.tiles.skipped, 0);
  ASSERT_LT(ref.tiles.skipped, ref.tiles.visited);

  const KernelRun run = run_kernel(c, in, c.scale_factor);
  EXPECT_EQ(run.tiles, ref.tiles) << "visited " << run.tiles.visited << " skipped " << run.tiles.skipped
                                  << ", reference " << ref.tiles.visited << " / " << ref.tiles.skipped;
  for (size_t i = 0; i < run.result.lse.size(); ++i) {
    ASSERT_NEAR(run.result.lse[i], ref.result.lse[i], 1e-5 * std::max(1.f, std::abs(ref.result.lse[i]))) << "row " << i;
  }
  for (size_t i = 0; i < run.result.out.size(); ++i) {
    ASSERT_NEAR(run.result.out[i], ref.result.out[i], 2e-5) << "element " << i;
  }
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(SkipSoftmaxKernel, TinyOrZeroScaleFactorIsTheDenseKernel) {
  const Case& c = GetParam();
  const Inputs in = inputs(c);
  const KernelRun dense = run_kernel(c, in, 0.0);
  EXPECT_EQ(dense.tiles, SkipSoftmaxTiles{});  // off: nothing counted
  const KernelRun tiny = run_kernel(c, in, 1e-30);
  EXPECT_GT(tiny.tiles.visited, 0);
  EXPECT_EQ(tiny.tiles.skipped, 0);
  EXPECT_TRUE(bit_identical(tiny.result.out, dense.result.out));
  EXPECT_TRUE(bit_identical(tiny.result.lse, dense.result.lse));
}

TEST_P(SkipSoftmaxKernel, LambdaOfOneOrMoreSkipsNothing) {
  const Case& c = GetParam();
  const Inputs in = inputs(c);
  const KernelRun dense = run_kernel(c, in, 0.0);
  for (double s : {static_cast<double>(c.nk), 10.0 * static_cast<double>(c.nk)}) {
    const KernelRun run = run_kernel(c, in, s);
    EXPECT_EQ(run.tiles.skipped, 0) << "S = " << s;
    EXPECT_TRUE(bit_identical(run.result.out, dense.result.out)) << "S = " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SkipSoftmaxKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Decoding on a bf16 cache: the votes and outputs of the rule on the stored values, where the build
// multiplies bf16 pairs on the kernel's rounded queries (attention_rounds_to_bf16), so a tile whose
// values wait for a vote is packed as pairs too.
TEST(SkipSoftmaxBf16Cache, DecodeFollowsTheRuleOnTheStoredValues) {
  const int saved = omp_get_max_threads();
  for (const Case& c : cases()) {
    if (c.nq != 1) continue;
    SCOPED_TRACE(c.name);
    omp_set_num_threads(c.threads);
    const Inputs in = inputs(c);
    std::vector<std::byte> k_stored(static_cast<size_t>(kv_bytes(KvDType::kBF16, static_cast<int64_t>(in.k.size()))));
    std::vector<std::byte> v_stored(k_stored.size());
    encode_kv(KvDType::kBF16, in.k.data(), static_cast<int64_t>(in.k.size()), k_stored.data());
    encode_kv(KvDType::kBF16, in.v.data(), static_cast<int64_t>(in.v.size()), v_stored.data());
    std::vector<float> k_read(in.k.size()), v_read(in.v.size());
    decode_kv(KvDType::kBF16, k_stored.data(), static_cast<int64_t>(k_read.size()), k_read.data());
    decode_kv(KvDType::kBF16, v_stored.data(), static_cast<int64_t>(v_read.size()), v_read.data());

    const bool pairs =
        cpu::attention_rounds_to_bf16(c.nq, c.n_heads, c.n_kv_heads, c.head_dim, KvDType::kBF16, /*skip_softmax=*/true);
    // With the pairs, the queries the kernel multiplies and the scale that takes base 2 back to e.
    const std::vector<float> q = pairs ? testing::bf16_pair_queries(in.q, kScale) : in.q;
    const float scale = pairs ? testing::kBf16PairsScale : kScale;
    const cpu::AttentionTiling tiling =
        cpu::attention_tiling(c.nq, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, omp_get_max_threads());
    const testing::SkipSoftmaxReference ref = testing::skip_softmax_reference(
        q, c.nq, k_read, v_read, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, scale, c.mask, c.scale_factor, tiling);
    ASSERT_GT(ref.closest_vote, 1e-4) << "a vote sits on the threshold; float rounding could flip it";
    ASSERT_GT(ref.tiles.skipped, 0);
    ASSERT_LT(ref.tiles.skipped, ref.tiles.visited);

    KernelRun run{{std::vector<float>(in.q.size(), 123.f), std::vector<float>(static_cast<size_t>(c.n_heads), 123.f)},
                  {}};
    cpu::attention_forward(in.q.data(), c.nq, KvRows{k_stored.data(), KvDType::kBF16},
                           KvRows{v_stored.data(), KvDType::kBF16}, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, kScale,
                           c.mask, run.result.out.data(), run.result.lse.data(), SkipSoftmax{c.scale_factor, &run.tiles});
    EXPECT_EQ(run.tiles, ref.tiles);
    const float slack = pairs ? testing::bf16_pairs_slack(v_read) : 0.f;
    for (size_t i = 0; i < run.result.lse.size(); ++i) {
      ASSERT_NEAR(run.result.lse[i], ref.result.lse[i], 1e-5 * std::max(1.f, std::abs(ref.result.lse[i]))) << "row " << i;
    }
    for (size_t i = 0; i < run.result.out.size(); ++i) {
      ASSERT_NEAR(run.result.out[i], ref.result.out[i], slack + 2e-5) << "element " << i;
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace star
