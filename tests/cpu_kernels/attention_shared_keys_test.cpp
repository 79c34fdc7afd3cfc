// attention_forward_shared_keys: many independent queries against one set of keys give, query by
// query, bit for bit what attention_forward gives each alone (the batched Phase 2 relies on it:
// a sequence's answer must not depend on what else decodes beside it), and the decoding case runs
// as one kernel call, not one a query.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_kernels/attention_reference.h"
#include "star/backend/cpu/attention.h"
#include "star/backend/cpu/attention_kernel_clock.h"
#include "star/model/kv_dtype.h"

namespace star {
namespace {

struct Case {
  std::string name;
  int64_t queries, nq, nk, n_heads, n_kv_heads, head_dim;
};

std::vector<Case> cases() {
  return {
      // The `small` preset's shape: 16 decoding sequences on a 1,024-token shard.
      {"small_preset_16_streams", 16, 1, 1024, 12, 4, 64},
      // Row blocks that straddle queries and a partial last block (3 rows a query).
      {"group_of_3_rows_cross_blocks", 7, 1, 300, 6, 2, 64},
      {"two_tokens_group_2", 5, 2, 300, 4, 2, 128},
      {"group_of_4", 3, 1, 97, 16, 4, 64},
      // Keys transposed in whole vectors of 16: a last tile of 13 keys, head_dim of three vectors.
      {"head_dim_48_keys_past_a_vector", 5, 1, 77, 6, 2, 48},
      {"group_of_2_long_keys_split_on_threads", 6, 1, 5000, 8, 4, 64},
      // Past a row block a query: one call a query, but on a bf16 cache where the pairs take it.
      {"query_rows_past_a_block", 4, 3, 200, 8, 2, 64},
      // Fifteen 16-token queries arriving on the `small` preset's shard (48 rows a query); past a
      // query tile (144 rows), one call a query again.
      {"small_preset_16_token_queries", 15, 16, 1024, 12, 4, 64},
      {"query_rows_past_a_tile", 3, 36, 200, 12, 3, 64},
      {"head_dim_not_a_vector_multiple", 3, 1, 150, 4, 2, 34},
      {"one_query", 1, 1, 500, 8, 4, 64},
      {"no_keys", 4, 1, 0, 8, 4, 64},
  };
}

std::vector<std::byte> stored(KvDType dtype, const std::vector<float>& values) {
  std::vector<std::byte> bytes(static_cast<size_t>(kv_bytes(dtype, static_cast<int64_t>(values.size()))));
  if (values.empty()) return bytes;  // no keys: nothing to encode (and no null pointers to memcpy)
  encode_kv(dtype, values.data(), static_cast<int64_t>(values.size()), bytes.data());
  return bytes;
}

void expect_equal_bits(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << " element " << i << ": " << got[i] << " shared, " << want[i] << " alone";
  }
}

void expect_equals_each_query_alone(const Case& c, KvDType dtype) {
  SCOPED_TRACE(c.name + " " + kv_dtype_name(dtype) + " threads " + std::to_string(omp_get_max_threads()));
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  const size_t kv_count = static_cast<size_t>(c.nk * c.n_kv_heads * c.head_dim);
  const int64_t rows = c.queries * c.nq;
  const auto q = testing::random_tensor(static_cast<size_t>(rows * c.n_heads * c.head_dim), rng, -3, 3);
  const auto k_stored = stored(dtype, testing::random_tensor(kv_count, rng, -2, 2));
  const auto v_stored = stored(dtype, testing::random_tensor(kv_count, rng));
  const KvRows k{k_stored.data(), dtype}, v{v_stored.data(), dtype};
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t q_floats = c.nq * c.n_heads * c.head_dim;

  std::vector<float> alone_out(static_cast<size_t>(rows * c.n_heads * c.head_dim), 7.f);
  std::vector<float> alone_lse(static_cast<size_t>(rows * c.n_heads), 7.f);
  for (int64_t i = 0; i < c.queries; ++i) {
    cpu::attention_forward(q.data() + i * q_floats, c.nq, k, v, c.nk, c.n_heads, c.n_kv_heads, c.head_dim, scale, {},
                           alone_out.data() + i * q_floats, alone_lse.data() + i * c.nq * c.n_heads);
  }
  std::vector<float> out(alone_out.size(), -9.f), lse(alone_lse.size(), -9.f);
  cpu::set_attention_kernel_clock(true);
  cpu::attention_forward_shared_keys(q.data(), c.queries, c.nq, k, v, c.nk, c.n_heads, c.n_kv_heads, c.head_dim,
                                     scale, out.data(), lse.data());
  const cpu::AttentionKernelClockReading calls = cpu::read_attention_kernel_clock();
  cpu::set_attention_kernel_clock(false);
  expect_equal_bits(out, alone_out, "out");
  expect_equal_bits(lse, alone_lse, "lse");
  const bool shared = cpu::attention_shares_key_tiles(c.nq, c.n_heads, c.n_kv_heads, c.head_dim, dtype);
  EXPECT_EQ(calls.prefill.calls + calls.decode.calls, shared ? 1 : c.queries);
  if (c.nq == 1) EXPECT_EQ(calls.decode.calls, shared ? 1 : c.queries) << "booked as decode calls";

  // Independent of the kernel: the double-precision reference on the same stored K and V.
  std::vector<float> k_read(kv_count), v_read(kv_count);
  if (kv_count > 0) {
    decode_kv(dtype, k_stored.data(), static_cast<int64_t>(kv_count), k_read.data());
    decode_kv(dtype, v_stored.data(), static_cast<int64_t>(kv_count), v_read.data());
  }
  const std::vector<float> first_query(q.begin(), q.begin() + q_floats);
  const bool pairs = cpu::attention_rounds_to_bf16(c.nq, c.n_heads, c.n_kv_heads, c.head_dim, dtype, false);
  const testing::AttentionResult ref =
      pairs ? testing::reference_attention_bf16_pairs(first_query, c.nq, k_read, v_read, c.nk, c.n_heads,
                                                      c.n_kv_heads, c.head_dim, scale, {})
            : testing::reference_attention(first_query, c.nq, k_read, v_read, c.nk, c.n_heads, c.n_kv_heads,
                                           c.head_dim, scale, {});
  const float slack = pairs ? testing::bf16_pairs_slack(v_read) : 0.f;
  for (size_t i = 0; i < ref.out.size(); ++i) {
    ASSERT_NEAR(out[i], ref.out[i], slack + 1e-5 * std::max(1.f, std::abs(ref.out[i]))) << "element " << i;
  }
}

class AttentionSharedKeys : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionSharedKeys, EachQueryEqualsItselfAloneBitForBit) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (KvDType dtype : {KvDType::kF32, KvDType::kBF16, KvDType::kQ8_0}) {
      if (!check_kv_dtype(dtype, GetParam().head_dim).ok()) continue;  // q8_0 needs d % 32 == 0
      expect_equals_each_query_alone(GetParam(), dtype);
    }
  }
  omp_set_num_threads(saved);
}

// One token with two query heads a kv head fits a row block of every build's vectors (4 SSE lanes,
// 8 with AVX); past a block, or with head_dim not a whole number of the row blocks' vectors (16
// floats with AVX-512), each query runs alone.
TEST(AttentionSharedKeysScope, DecodingTokensOfSmallGroupsShareKeyTiles) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kQ8_0}) {
    EXPECT_TRUE(cpu::attention_shares_key_tiles(1, 8, 4, 64, dtype));
    EXPECT_TRUE(cpu::attention_shares_key_tiles(1, 32, 16, 128, dtype));
    EXPECT_FALSE(cpu::attention_shares_key_tiles(3, 8, 2, 64, dtype));
    EXPECT_FALSE(cpu::attention_shares_key_tiles(16, 12, 4, 64, dtype));
  }
  EXPECT_TRUE(cpu::attention_shares_key_tiles(1, 4, 2, 48, KvDType::kF32));
  EXPECT_FALSE(cpu::attention_shares_key_tiles(1, 8, 4, 34, KvDType::kF32));
#if defined(__AVX512F__)
  EXPECT_FALSE(cpu::attention_shares_key_tiles(1, 8, 4, 40, KvDType::kF32));
#endif
}

// Where the bf16 pairs take a query (AVX512-BF16, a bf16 cache, head_dim a multiple of 32), its rows
// share key tiles up to one query tile, 128 rows a kv head: a 16-token query with 3 or 8 query
// heads a kv head, not 64 tokens with 3 or 16 with 9.
TEST(AttentionSharedKeysScope, Bf16PairsShareShortQueries) {
  const bool pairs = cpu::attention_rounds_to_bf16(16, 12, 4, 64, KvDType::kBF16, false);
  EXPECT_EQ(cpu::attention_shares_key_tiles(16, 12, 4, 64, KvDType::kBF16), pairs);
  EXPECT_EQ(cpu::attention_shares_key_tiles(16, 64, 8, 128, KvDType::kBF16), pairs);
  EXPECT_EQ(cpu::attention_shares_key_tiles(3, 8, 2, 64, KvDType::kBF16), pairs);
  EXPECT_FALSE(cpu::attention_shares_key_tiles(64, 12, 4, 64, KvDType::kBF16));
  EXPECT_FALSE(cpu::attention_shares_key_tiles(16, 36, 4, 64, KvDType::kBF16));
  EXPECT_FALSE(cpu::attention_shares_key_tiles(16, 12, 4, 48, KvDType::kBF16));
#if defined(__AVX512BF16__)
  EXPECT_TRUE(pairs);
#endif
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionSharedKeys, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace star
