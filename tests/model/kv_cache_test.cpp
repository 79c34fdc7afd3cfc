// KvDType and KvCache: the --kv-dtype spelling and its errors, the stored layouts (bf16 bits, GGUF
// Q8_0 blocks per head row), exact byte counts, and rows stored, appended and read back.
#include "star/model/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "star/model/dtype.h"
#include "star/model/kv_dtype.h"
#include "star/quant/blocks.h"

namespace star {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float range = 3.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<std::byte> encoded(KvDType dtype, const std::vector<float>& values) {
  std::vector<std::byte> bytes(static_cast<size_t>(kv_bytes(dtype, static_cast<int64_t>(values.size()))));
  encode_kv(dtype, values.data(), static_cast<int64_t>(values.size()), bytes.data());
  return bytes;
}

std::vector<float> decoded(KvDType dtype, const std::vector<std::byte>& bytes, size_t n) {
  std::vector<float> v(n);
  decode_kv(dtype, bytes.data(), static_cast<int64_t>(n), v.data());
  return v;
}

TEST(KvDType, NamesParseBackAndOthersAreRefusedNamingTheFlag) {
  for (const std::string& name : kv_dtype_names()) {
    Result<KvDType> dtype = parse_kv_dtype(name);
    ASSERT_TRUE(dtype.ok()) << name;
    EXPECT_EQ(kv_dtype_name(*dtype), name);
  }
  for (const char* bad : {"", "F32", "fp16", "q8", "q4_0"}) {
    Result<KvDType> dtype = parse_kv_dtype(bad);
    ASSERT_FALSE(dtype.ok()) << bad;
    EXPECT_EQ(dtype.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(dtype.status().message().find("--kv-dtype"), std::string::npos);
  }
}

TEST(KvDType, EachBackendDefaultsToItsOwnTypeAndCudaRefusesAllButBf16) {
  EXPECT_EQ(*resolve_kv_dtype("cpu", ""), KvDType::kF32);
  EXPECT_EQ(*resolve_kv_dtype("cuda", ""), KvDType::kBF16);
  EXPECT_EQ(*resolve_kv_dtype("cpu", "q8_0"), KvDType::kQ8_0);
  EXPECT_EQ(*resolve_kv_dtype("cuda", "bf16"), KvDType::kBF16);
  for (const char* refused : {"f32", "q8_0"}) {
    Result<KvDType> dtype = resolve_kv_dtype("cuda", refused);
    ASSERT_FALSE(dtype.ok()) << refused;
    EXPECT_EQ(dtype.status().message(),
              std::string("--kv-dtype ") + refused + ": the cuda backend keeps its KV in bf16 only");
  }
  EXPECT_FALSE(resolve_kv_dtype("cpu", "f16").ok());
}

TEST(KvDType, Q8_0NeedsHeadDimInWholeBlocks) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kBF16}) EXPECT_TRUE(check_kv_dtype(dtype, 12).ok());
  EXPECT_TRUE(check_kv_dtype(KvDType::kQ8_0, 64).ok());
  const Status s = check_kv_dtype(KvDType::kQ8_0, 48);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--kv-dtype q8_0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("head_dim is 48"), std::string::npos) << s.message();
}

TEST(KvDType, Bf16StoresTheRoundedTopHalfLittleEndian) {
  const auto x = random_values(77, 1);
  const auto bytes = encoded(KvDType::kBF16, x);
  ASSERT_EQ(bytes.size(), 154u);
  const auto back = decoded(KvDType::kBF16, bytes, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t bits = f32_to_bf16(x[i]);
    EXPECT_EQ(static_cast<uint8_t>(bytes[2 * i]), bits & 0xff) << i;
    EXPECT_EQ(static_cast<uint8_t>(bytes[2 * i + 1]), bits >> 8) << i;
    EXPECT_EQ(back[i], bf16_to_f32(bits)) << i;
  }
}

// Multiples of 0.5 with max |x| = 63.5: d = 63.5 / 127 = 0.5 exactly, so every q is 2x and the
// block decodes to the input exactly.
TEST(KvDType, Q8_0IsTheGgufBlockLayout) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>((j * 37) % 255 - 127);
  x[5] = -63.5f;
  const auto bytes = encoded(KvDType::kQ8_0, x);
  ASSERT_EQ(bytes.size(), sizeof(quant::BlockQ8_0));
  quant::BlockQ8_0 block;
  std::memcpy(&block, bytes.data(), sizeof(block));
  EXPECT_EQ(block.d, f32_to_f16(0.5f));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(block.qs[j], static_cast<int8_t>(2 * x[j])) << j;
  EXPECT_EQ(decoded(KvDType::kQ8_0, bytes, 32), x);
}

TEST(KvDType, Q8_0KeepsEachElementWithinHalfAStepOfItsBlock) {
  auto x = random_values(4 * 32, 2);
  for (int j = 64; j < 96; ++j) x[j] = 0.f;  // an all-zero block: scale 0, exact
  const auto back = decoded(KvDType::kQ8_0, encoded(KvDType::kQ8_0, x), x.size());
  for (size_t b = 0; b < 4; ++b) {
    float amax = 0.f;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float step = f16_to_f32(f32_to_f16(amax / 127.f));
    for (size_t j = 0; j < 32; ++j) {
      // Half a step, plus the f16 rounding of the scale times |q| <= 127.
      EXPECT_LE(std::fabs(back[b * 32 + j] - x[b * 32 + j]), 0.5f * step + 127.f * step / 1024.f) << b << " " << j;
    }
  }
  for (int j = 64; j < 96; ++j) EXPECT_EQ(back[j], 0.f);
}

TEST(KvDType, RoundIsEncodeThenDecode) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kBF16, KvDType::kQ8_0}) {
    auto x = random_values(20 * 32, 3);
    const auto expected = decoded(dtype, encoded(dtype, x), x.size());
    round_kv(dtype, x.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(x, expected) << kv_dtype_name(dtype);
  }
}

TEST(KvCache, BytesPerTokenAreExactForEachType) {
  // 3 layers × K and V × 2 heads × 64: 768 elements a token.
  EXPECT_EQ(KvCache(3, 2, 64, KvDType::kF32).bytes_per_token(), 768u * 4);
  EXPECT_EQ(KvCache(3, 2, 64, KvDType::kBF16).bytes_per_token(), 768u * 2);
  EXPECT_EQ(KvCache(3, 2, 64, KvDType::kQ8_0).bytes_per_token(), 768u / 32 * 34);
  KvCache cache(3, 2, 64, KvDType::kQ8_0);
  cache.grow(5);
  EXPECT_EQ(cache.bytes(), 5 * cache.bytes_per_token());
  EXPECT_EQ(cache.row_bytes(), 4u * 34);
}

TEST(KvCache, StoredRowsReadBackAsEncodedAndAppendCopiesThemAsStored) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kBF16, KvDType::kQ8_0}) {
    SCOPED_TRACE(kv_dtype_name(dtype));
    const int64_t row = 2 * 32;
    const auto k = random_values(3 * row, 4), v = random_values(3 * row, 5);
    KvCache cache(2, 2, 32, dtype);
    const int64_t first = cache.grow(3);
    ASSERT_EQ(first, 0);
    cache.store(1, 0, k.data(), v.data(), 1);
    cache.store(1, 1, k.data() + row, v.data() + row, 2);
    const auto k_bytes = encoded(dtype, k), v_bytes = encoded(dtype, v);
    ASSERT_EQ(std::memcmp(cache.keys(1).data, k_bytes.data(), k_bytes.size()), 0);
    ASSERT_EQ(std::memcmp(cache.values(1).data, v_bytes.data(), v_bytes.size()), 0);
    // at(): rows from an element on, as the attention layers address them.
    EXPECT_EQ(cache.keys(1).at(2 * row).data, cache.keys(1).data + 2 * cache.row_bytes());

    KvCache longer(2, 2, 32, dtype);
    longer.store(1, longer.grow(1), v.data(), k.data(), 1);
    longer.append(cache);
    ASSERT_EQ(longer.tokens(), 4);
    EXPECT_EQ(longer.bytes(), 4 * cache.bytes_per_token());
    EXPECT_EQ(std::memcmp(longer.keys(1).data + cache.row_bytes(), k_bytes.data(), k_bytes.size()), 0);
    EXPECT_EQ(std::memcmp(longer.values(1).data + cache.row_bytes(), v_bytes.data(), v_bytes.size()), 0);
    longer.truncate(2);
    EXPECT_EQ(longer.bytes(), 2 * cache.bytes_per_token());
  }
}

// What a rank sends when a sequence's own tokens move (stored_rows) rebuilds, on the other side,
// a cache with every layer's rows byte for byte, after rows it already holds.
TEST(KvCache, StoredRowsRebuildTheCacheElsewhereByteForByte) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kBF16, KvDType::kQ8_0}) {
    SCOPED_TRACE(kv_dtype_name(dtype));
    const int64_t row = 2 * 32;
    KvCache cache(3, 2, 32, dtype);
    cache.grow(5);
    for (int64_t l = 0; l < 3; ++l) {
      const auto k = random_values(5 * row, 10 + static_cast<uint32_t>(l));
      const auto v = random_values(5 * row, 20 + static_cast<uint32_t>(l));
      cache.store(l, 0, k.data(), v.data(), 5);
    }
    const std::vector<std::byte> rows = cache.stored_rows();
    ASSERT_EQ(rows.size(), cache.bytes());

    KvCache moved(3, 2, 32, dtype);
    const auto first = random_values(row, 30);
    moved.store(0, moved.grow(1), first.data(), first.data(), 1);
    moved.append_stored(rows, 5);
    ASSERT_EQ(moved.tokens(), 6);
    const auto first_bytes = encoded(dtype, first);
    EXPECT_EQ(std::memcmp(moved.keys(0).data, first_bytes.data(), moved.row_bytes()), 0) << "the row held before";
    for (int64_t l = 0; l < 3; ++l) {
      EXPECT_EQ(std::memcmp(moved.keys(l).data + moved.row_bytes(), cache.keys(l).data, 5 * cache.row_bytes()), 0);
      EXPECT_EQ(std::memcmp(moved.values(l).data + moved.row_bytes(), cache.values(l).data, 5 * cache.row_bytes()), 0);
    }
    KvCache empty(3, 2, 32, dtype);
    EXPECT_TRUE(empty.stored_rows().empty());
    empty.append_stored(empty.stored_rows(), 0);
    EXPECT_EQ(empty.tokens(), 0);
  }
}

}  // namespace
}  // namespace star
