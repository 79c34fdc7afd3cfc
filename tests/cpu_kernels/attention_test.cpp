// attention_forward against a naive double-precision full-softmax reference.
#include "star/backend/cpu/attention.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>

#include "cpu_kernels/attention_reference.h"

namespace star {
namespace {

struct Case {
  std::string name;
  int64_t nq, nk, n_heads, n_kv_heads, head_dim;
  AttentionMask mask;
  float scale = 0.f;  // 0: 1 / sqrt(head_dim)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

AttentionMask causal(int64_t offset, int64_t sink = 0, int64_t window = 0) {
  return AttentionMask{true, offset, AttentionWindow{sink, window}};
}

std::vector<Case> cases() {
  std::vector<Case> all;
  // Every GQA ratio (1, 2, 4) with every head size, causal with offset nk - nq.
  for (int64_t d : {8, 64, 128}) {
    for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}, {8, 2}}) {
      all.push_back({"causal_d" + std::to_string(d) + "_gqa" + std::to_string(hq / hkv), 37, 203,
                     hq, hkv, d, causal(203 - 37)});
    }
  }
  all.push_back({"no_mask_small", 5, 100, 8, 2, 64, {}});
  all.push_back({"no_mask_gqa4_d128", 70, 300, 4, 1, 128, {}});
  all.push_back({"causal_square", 193, 193, 8, 2, 64, causal(0)});
  all.push_back({"early_rows_see_nothing", 30, 30, 4, 2, 64, causal(-7)});
  all.push_back({"no_row_sees_anything", 30, 50, 4, 2, 64, causal(-200)});
  all.push_back({"window_sink4_w16", 300, 300, 8, 2, 64, causal(0, 4, 16)});
  all.push_back({"window_no_sink", 150, 150, 4, 4, 64, causal(0, 0, 33)});
  all.push_back({"window_chunk_with_offset", 20, 500, 8, 2, 128, causal(480, 10, 64)});
  all.push_back({"window_without_causal", 40, 200, 4, 2, 64,
                 AttentionMask{false, 100, AttentionWindow{3, 50}}});
  all.push_back({"window_skips_middle_tiles", 8, 1000, 4, 1, 64, causal(992, 10, 100)});
  all.push_back({"decode_causal", 1, 1000, 8, 2, 128, causal(999)});
  all.push_back({"decode_no_mask", 1, 97, 32, 8, 64, {}});
  all.push_back({"decode_window", 1, 777, 4, 1, 64, causal(776, 4, 128)});
  // Decoding shapes: a kv head with 1 to 4 query rows takes the row-major path when head_dim
  // fills whole vectors.
  all.push_back({"decode_mha_d8", 1, 300, 4, 4, 8, causal(299)});
  all.push_back({"decode_gqa2_window", 1, 500, 8, 4, 64, causal(499, 16, 100)});
  all.push_back({"decode_group_of_3", 1, 200, 6, 2, 128, {}});
  all.push_back({"two_tokens_first_sees_nothing", 2, 50, 4, 2, 64, causal(-1)});
  all.push_back({"decode_head_dim_12", 1, 100, 4, 2, 12, causal(99)});
  all.push_back({"empty_keys", 3, 0, 4, 2, 64, {}});
  all.push_back({"empty_keys_causal", 3, 0, 4, 2, 64, causal(0)});
  all.push_back({"wide_group_40_heads_per_kv", 7, 150, 40, 1, 8, causal(143)});
  all.push_back({"group_of_3", 25, 120, 6, 2, 64, causal(95)});
  all.push_back({"one_key", 4, 1, 4, 2, 64, {}});
  all.push_back({"peaked_scores", 16, 400, 4, 4, 64, {}, 1.f});
  return all;
}

void expect_matches_reference(const Case& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  const auto q = testing::random_tensor(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), rng, -2, 2);
  const auto k = testing::random_tensor(static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim), rng, -2, 2);
  const auto v = testing::random_tensor(static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim), rng);
  const float scale = c.scale != 0.f ? c.scale : 1.f / std::sqrt(static_cast<float>(c.head_dim));

  std::vector<float> out(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), 123.f);
  std::vector<float> lse(static_cast<size_t>(c.nq * c.n_heads), 123.f);
  cpu::attention_forward(q.data(), c.nq, k.data(), v.data(), c.nk, c.n_heads, c.n_kv_heads,
                         c.head_dim, scale, c.mask, out.data(), lse.data());
  const auto ref = testing::reference_attention(q, c.nq, k, v, c.nk, c.n_heads, c.n_kv_heads,
                                                c.head_dim, scale, c.mask);
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      ASSERT_TRUE(std::isinf(lse[i]) && lse[i] < 0) << "row " << i << " lse " << lse[i];
    } else {
      ASSERT_NEAR(lse[i], ref.lse[i], 1e-5 * std::max(1.f, std::abs(ref.lse[i]))) << "row " << i;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], ref.out[i], 1e-5 * std::max(1.f, std::abs(ref.out[i]))) << "element " << i;
  }
}

class AttentionForward : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionForward, MatchesNaiveReference) { expect_matches_reference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, AttentionForward, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Few (kv head, query tile) tasks for many threads makes the kernel split the keys and merge the
// pieces; one thread never splits. Both must match the reference.
TEST(AttentionForwardThreads, SplitKeysMatchSingleThread) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 3, 8}) {
    omp_set_num_threads(threads);
    expect_matches_reference({"decode_split_" + std::to_string(threads), 1, 5000, 8, 1, 64, causal(4999)});
    expect_matches_reference({"short_prefill_split_" + std::to_string(threads), 3, 2000, 4, 2, 128,
                              causal(1997, 16, 700)});
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace star
