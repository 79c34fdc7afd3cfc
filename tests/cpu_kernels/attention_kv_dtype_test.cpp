// attention_forward on bf16 and q8_0 K/V read as stored: bit for bit the float32 kernel run on
// decode_kv's values of the same rows (the kernel decodes each tile to those values and then runs
// the float32 arithmetic), and within float rounding of the double-precision reference on them.
// Where the build multiplies bf16 pairs (attention_rounds_to_bf16: a bf16 cache with AVX512-BF16,
// prefill and decoding alike), the reference takes the kernel's rounded queries and allows for its rounded
// probabilities instead.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>

#include "cpu_kernels/attention_reference.h"
#include "star/backend/cpu/attention.h"
#include "star/model/kv_dtype.h"

namespace star {
namespace {

struct Case {
  std::string name;
  int64_t nq, nk, n_heads, n_kv_heads, head_dim;
  AttentionMask mask;
};

AttentionMask causal(int64_t offset, int64_t sink = 0, int64_t window = 0) {
  return AttentionMask{true, offset, AttentionWindow{sink, window}};
}

// Prefill (column blocks), decoding (row blocks and key splits), every GQA ratio, masks, windows.
std::vector<Case> cases() {
  return {
      {"causal_d64_gqa1", 37, 203, 4, 4, 64, causal(203 - 37)},
      {"causal_d128_gqa2", 37, 203, 4, 2, 128, causal(203 - 37)},
      {"causal_d64_gqa4", 37, 203, 8, 2, 64, causal(203 - 37)},
      {"no_mask", 70, 300, 4, 1, 128, {}},
      {"causal_square", 193, 193, 8, 2, 64, causal(0)},
      {"early_rows_see_nothing", 30, 30, 4, 2, 64, causal(-7)},
      {"window_sink4_w16", 300, 300, 8, 2, 64, causal(0, 4, 16)},
      {"window_without_causal", 40, 200, 4, 2, 64, AttentionMask{false, 100, AttentionWindow{3, 50}}},
      {"window_skips_middle_tiles", 8, 1000, 4, 1, 64, causal(992, 10, 100)},
      {"decode_causal", 1, 1000, 8, 2, 128, causal(999)},
      {"decode_no_mask", 1, 97, 32, 8, 64, {}},
      {"decode_window", 1, 777, 4, 1, 64, causal(776, 4, 128)},
      {"decode_group_of_3", 1, 200, 6, 2, 128, {}},
      {"decode_d32", 1, 300, 4, 4, 32, causal(299)},
      {"decode_d96", 1, 301, 8, 2, 96, causal(300)},
      {"decode_d256_group_of_3", 1, 150, 6, 2, 256, {}},
      {"empty_keys", 3, 0, 4, 2, 64, causal(0)},
  };
}

std::vector<std::byte> stored(KvDType dtype, const std::vector<float>& values) {
  std::vector<std::byte> bytes(static_cast<size_t>(kv_bytes(dtype, static_cast<int64_t>(values.size()))));
  encode_kv(dtype, values.data(), static_cast<int64_t>(values.size()), bytes.data());
  return bytes;
}

std::vector<float> decoded(KvDType dtype, const std::vector<std::byte>& bytes, size_t count) {
  std::vector<float> values(count);
  decode_kv(dtype, bytes.data(), static_cast<int64_t>(count), values.data());
  return values;
}

void expect_reads_stored_type(const Case& c, KvDType dtype) {
  SCOPED_TRACE(c.name + " " + kv_dtype_name(dtype));
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  const size_t kv_count = static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim);
  const auto q = testing::random_tensor(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), rng, -2, 2);
  const auto k = testing::random_tensor(kv_count, rng, -2, 2);
  const auto v = testing::random_tensor(kv_count, rng);
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  const auto k_stored = stored(dtype, k), v_stored = stored(dtype, v);
  const auto k_read = decoded(dtype, k_stored, kv_count), v_read = decoded(dtype, v_stored, kv_count);
  if (kv_count > 0) ASSERT_NE(k_read, k) << "the stored type must round: otherwise this test shows nothing";

  const size_t out_count = static_cast<size_t>(c.nq * c.n_heads * c.head_dim);
  const size_t lse_count = static_cast<size_t>(c.nq * c.n_heads);
  std::vector<float> out(out_count, 123.f), lse(lse_count, 123.f);
  cpu::attention_forward(q.data(), c.nq, KvRows{k_stored.data(), dtype}, KvRows{v_stored.data(), dtype}, c.nk,
                         c.n_heads, c.n_kv_heads, c.head_dim, scale, c.mask, out.data(), lse.data());
  const bool pairs = cpu::attention_rounds_to_bf16(c.nq, c.n_heads, c.n_kv_heads, c.head_dim, dtype, false);
  if (!pairs) {
    std::vector<float> f32_out(out_count, -5.f), f32_lse(lse_count, -5.f);
    cpu::attention_forward(q.data(), c.nq, k_read.data(), v_read.data(), c.nk, c.n_heads, c.n_kv_heads,
                           c.head_dim, scale, c.mask, f32_out.data(), f32_lse.data());
    ASSERT_EQ(std::memcmp(out.data(), f32_out.data(), out_count * sizeof(float)), 0);
    ASSERT_EQ(std::memcmp(lse.data(), f32_lse.data(), lse_count * sizeof(float)), 0);
  }

  const auto ref = pairs ? testing::reference_attention_bf16_pairs(q, c.nq, k_read, v_read, c.nk, c.n_heads,
                                                                   c.n_kv_heads, c.head_dim, scale, c.mask)
                         : testing::reference_attention(q, c.nq, k_read, v_read, c.nk, c.n_heads, c.n_kv_heads,
                                                        c.head_dim, scale, c.mask);
  const float slack = pairs ? testing::bf16_pairs_slack(v_read) : 0.f;
  for (size_t i = 0; i < lse_count; ++i) {
    if (std::isinf(ref.lse[i])) {
      ASSERT_TRUE(std::isinf(lse[i]) && lse[i] < 0) << "row " << i;
    } else {
      ASSERT_NEAR(lse[i], ref.lse[i], 1e-5 * std::max(1.f, std::abs(ref.lse[i]))) << "row " << i;
    }
  }
  for (size_t i = 0; i < out_count; ++i) {
    ASSERT_NEAR(out[i], ref.out[i], slack + 1e-5 * std::max(1.f, std::abs(ref.out[i]))) << "element " << i;
  }
}

class AttentionKvDType : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionKvDType, Bf16ReadsTheStoredValues) { expect_reads_stored_type(GetParam(), KvDType::kBF16); }
TEST_P(AttentionKvDType, Q8_0IsTheF32KernelOnTheStoredValues) { expect_reads_stored_type(GetParam(), KvDType::kQ8_0); }

INSTANTIATE_TEST_SUITE_P(Cases, AttentionKvDType, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Many threads on a short query split the keys and merge the pieces (the decode path).
TEST(AttentionKvDTypeThreads, SplitKeysReadTheStoredType) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 3, 8}) {
    omp_set_num_threads(threads);
    for (KvDType dtype : {KvDType::kBF16, KvDType::kQ8_0}) {
      expect_reads_stored_type({"decode_split_" + std::to_string(threads), 1, 5000, 8, 1, 64, causal(4999)}, dtype);
      expect_reads_stored_type(
          {"short_prefill_split_" + std::to_string(threads), 3, 2000, 4, 2, 128, causal(1997, 16, 700)}, dtype);
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace star
