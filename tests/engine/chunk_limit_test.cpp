// Chunk sizing by cost (star/engine/chunk_limit.h) against row-by-row sums: the cost of a chunk is
// its rows plus the keys each row attends over K, and a chunk is the most rows within the budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "star/engine/chunk_limit.h"
#include "star/model/synthetic_model.h"

namespace star {
namespace {

// Row i (1-based) of a chunk whose first row sees `keys_before` earlier keys attends keys_before + i
// keys, or `cap` of them under a window.
double summed_cost(int64_t rows, int64_t keys_before, int64_t keys_per_token, int64_t cap) {
  double cost = 0;
  for (int64_t i = 1; i <= rows; ++i) {
    const int64_t keys = cap > 0 ? std::min(keys_before + i, cap) : keys_before + i;
    cost += 1.0 + static_cast<double>(keys) / static_cast<double>(keys_per_token);
  }
  return cost;
}

TEST(ChunkLimit, KeysPerTokenIsTheModelsMatmulToAttentionFlopRatio) {
  // small: per layer 768·768 (q) + 2·768·256 (k, v) + 768·768 (o) + 3·768·2048 (MLP) = 6,291,456
  // weights, 2 FLOPs each; a key costs 4·12·64 = 3,072 FLOPs (QK and PV): 4,096 keys.
  Result<LlamaConfig> small = synthetic_preset("small");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(attention_keys_per_token(*small), 4096);
  // SmolLM2-135M's shape: dim 576, 9 heads / 3 KV heads of 64, FFN 1536: 3,538,944 weights per layer,
  // 2,304 FLOPs a key: 3,072 keys.
  LlamaConfig smollm2;
  smollm2.dim = 576;
  smollm2.n_heads = 9;
  smollm2.n_kv_heads = 3;
  smollm2.head_dim = 64;
  smollm2.hidden_dim = 1536;
  EXPECT_EQ(attention_keys_per_token(smollm2), 3072);
}

TEST(ChunkLimit, CostIsTheRowByRowSum) {
  for (int64_t cap : {int64_t{0}, int64_t{30}, int64_t{200}}) {
    for (int64_t keys_before : {int64_t{0}, int64_t{5}, int64_t{29}, int64_t{100}, int64_t{1000}}) {
      for (int64_t rows = 1; rows <= 60; ++rows) {
        SCOPED_TRACE("cap " + std::to_string(cap) + ", keys " + std::to_string(keys_before) + ", rows " +
                     std::to_string(rows));
        EXPECT_NEAR(chunk_cost(rows, keys_before, 16, cap), summed_cost(rows, keys_before, 16, cap), 1e-9);
      }
    }
  }
}

TEST(ChunkLimit, RowsAreTheMostWithinTheBudgetAndAtLeastOne) {
  for (int64_t budget : {int64_t{1}, int64_t{3}, int64_t{12}, int64_t{40}}) {
    for (int64_t max_tokens : {int64_t{0}, int64_t{8}}) {
      const ChunkLimit limit = ChunkLimit::by_tokens_and_cost(max_tokens, budget, 8);
      for (int64_t keys_before : {int64_t{0}, int64_t{3}, int64_t{50}, int64_t{400}}) {
        for (int64_t left : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{100}}) {
          SCOPED_TRACE("budget " + std::to_string(budget) + ", max tokens " + std::to_string(max_tokens) +
                       ", keys " + std::to_string(keys_before) + ", left " + std::to_string(left));
          const int64_t rows = chunk_rows(limit, left, keys_before, 0);
          const int64_t most = max_tokens > 0 ? std::min(left, max_tokens) : left;
          ASSERT_GE(rows, 1);
          ASSERT_LE(rows, most);
          if (rows > 1) EXPECT_LE(summed_cost(rows, keys_before, 8, 0), static_cast<double>(budget));
          if (rows < most) EXPECT_GT(summed_cost(rows + 1, keys_before, 8, 0), static_cast<double>(budget));
        }
      }
    }
  }
}

TEST(ChunkLimit, WithoutACostOnlyTokensCount) {
  EXPECT_EQ(chunk_rows(ChunkLimit(), 500, 100000, 0), 500);
  EXPECT_EQ(chunk_rows(ChunkLimit(64), 500, 100000, 0), 64);
  EXPECT_EQ(chunk_rows(ChunkLimit(64), 20, 100000, 0), 20);
}

// Under a window every row past it attends the same keys: the chunk stops shrinking there.
TEST(ChunkLimit, AWindowBoundsTheKeysARowPays) {
  const ChunkLimit limit = ChunkLimit::by_tokens_and_cost(0, 20, 10);
  EXPECT_EQ(chunk_rows(limit, 1000, 5000, 30), chunk_rows(limit, 1000, 90000, 30));
  EXPECT_EQ(chunk_rows(limit, 1000, 5000, 30), 5);  // 5 rows at 30 keys: 5 · (1 + 3) = 20
  EXPECT_LT(chunk_rows(limit, 1000, 5000, 0), 5);
}

}  // namespace
}  // namespace star
