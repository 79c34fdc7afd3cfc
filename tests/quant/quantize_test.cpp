#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant_fixtures.h"
#include "star/quant/blocks.h"
#include "star/quant/dequantize.h"

namespace star::quant {
namespace {

using testing::QuantizeCase;

TEST(Quantize, ReferenceTypesMatchGgufQuantizeBitForBit) {
  const std::vector<QuantizeCase> cases = testing::load_quantize_cases();
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                      DType::kQ8_0}) {
    int covered = 0;
    for (const QuantizeCase& c : cases) {
      if (c.dtype != dtype) continue;
      ++covered;
      const std::vector<std::byte> blocks = quantize_rows(dtype, c.values.data(), c.rows, c.k);
      ASSERT_EQ(blocks.size(), c.expected.size()) << dtype_name(dtype) << " " << c.label;
      for (size_t i = 0; i < blocks.size(); ++i) {
        ASSERT_EQ(static_cast<int>(blocks[i]), static_cast<int>(c.expected[i]))
            << dtype_name(dtype) << " " << c.label << ": byte " << i << " of block "
            << i / dtype_block_bytes(dtype);
      }
    }
    EXPECT_GT(covered, 0) << "no fixture case for " << dtype_name(dtype);
  }
}

TEST(Quantize, F32RowsAreStoredAsTheyAre) {
  const std::vector<float> values = {1.0f, -0.0f, 3.5e-42f, INFINITY};
  const std::vector<std::byte> bytes = quantize_rows(DType::kF32, values.data(), 2, 2);
  std::vector<float> back(4);
  dequantize_rows(DType::kF32, bytes.data(), 2, 2, back.data());
  EXPECT_EQ(0, std::memcmp(back.data(), values.data(), sizeof(float) * 4));
}

// Super-blocks that exercise the K-quant bound: sub-blocks of different magnitudes, all-positive
// and all-negative sub-blocks, zeros, a constant, an outlier.
std::vector<float> k_quant_rows(int64_t rows) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(rows * kSuperBlock));
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t sub = i / 16;
    const float magnitude = std::pow(4.0f, static_cast<float>(sub % 7) - 3.0f);
    switch ((i / kSuperBlock) % 5) {
      case 0: values[i] = magnitude * normal(rng); break;
      case 1: values[i] = magnitude * std::fabs(normal(rng)) + 0.5f; break;
      case 2: values[i] = -magnitude * std::fabs(normal(rng)) - 0.25f; break;
      case 3: values[i] = sub % 3 == 0 ? 0.0f : sub % 3 == 1 ? -1.5f : 0.02f * normal(rng); break;
      default: values[i] = (i % 97 == 5) ? 30.0f : 0.1f * normal(rng); break;
    }
  }
  return values;
}

// The bound derived in src/quant/quantize_kquants.cpp, from the input alone:
//   affine (Q4_K nmax 15, Q5_K nmax 31; sub-blocks of 32):
//     Dmin ≤ u · max_j(−lo_j)/63,  s_j ≤ (range_j + Dmin)/nmax,  D ≤ u · max_j s_j / 63,
//     |x − x̂| ≤ (s_j + D) / 2
//   symmetric (Q6_K; sub-blocks of 16): s_j = max|x|/31, D ≤ u · max_j s_j / 127, |x − x̂| ≤ (s_j + D)/2
// with u = 1 + 2^-10 (a half rounded up), and a float32 rounding allowance of a few ulps.
std::vector<float> k_quant_bound(DType dtype, const float* x) {
  const bool affine = dtype != DType::kQ6_K;
  const int sub_size = affine ? 32 : 16;
  const int subs = kSuperBlock / sub_size;
  const float nmax = dtype == DType::kQ4_K ? 15.0f : 31.0f;
  const float u = 1.0f + 1.0f / 1024.0f;
  std::vector<float> lo(subs), range(subs), s(subs);
  float largest_min = 0.0f, magnitude = 0.0f;
  for (int j = 0; j < subs; ++j) {
    const float* sub = x + j * sub_size;
    const float low = std::min(0.0f, *std::min_element(sub, sub + sub_size));
    const float high = *std::max_element(sub, sub + sub_size);
    lo[j] = low;
    range[j] = affine ? high - low : std::max(std::fabs(low), std::fabs(high));
    largest_min = std::max(largest_min, -low);
    magnitude = std::max({magnitude, std::fabs(low), std::fabs(high)});
  }
  const float dmin = affine ? u * largest_min / 63.0f : 0.0f;
  float largest_scale = 0.0f;
  for (int j = 0; j < subs; ++j) {
    s[j] = (range[j] + dmin) / nmax;
    largest_scale = std::max(largest_scale, s[j]);
  }
  const float d = u * largest_scale / (affine ? 63.0f : 127.0f);
  std::vector<float> bound(kSuperBlock);
  for (int i = 0; i < kSuperBlock; ++i) bound[i] = (s[i / sub_size] + d) / 2 + 1e-6f * magnitude;
  return bound;
}

TEST(Quantize, KQuantsRoundTripWithinTheirStatedBound) {
  const int64_t rows = 10;
  const std::vector<float> values = k_quant_rows(rows);
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const std::vector<std::byte> blocks = quantize_rows(dtype, values.data(), rows, kSuperBlock);
    ASSERT_EQ(static_cast<int64_t>(blocks.size()), rows * dtype_row_bytes(dtype, kSuperBlock));
    std::vector<float> back(values.size());
    dequantize_rows(dtype, blocks.data(), rows, kSuperBlock, back.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = values.data() + r * kSuperBlock;
      const std::vector<float> bound = k_quant_bound(dtype, x);
      for (int i = 0; i < kSuperBlock; ++i) {
        ASSERT_LE(std::fabs(back[r * kSuperBlock + i] - x[i]), bound[i])
            << dtype_name(dtype) << " row " << r << " element " << i << ": x = " << x[i];
      }
    }
  }
}

// More bits, less error: on the same Gaussian weights the K-quants rank as their widths do.
TEST(Quantize, KQuantErrorShrinksWithWidth) {
  std::mt19937 rng(99);
  std::normal_distribution<float> normal;
  std::vector<float> values(8 * kSuperBlock);
  for (float& v : values) v = 0.02f * normal(rng);
  auto rms_error = [&](DType dtype) {
    const std::vector<std::byte> blocks = quantize_rows(dtype, values.data(), 8, kSuperBlock);
    std::vector<float> back(values.size());
    dequantize_rows(dtype, blocks.data(), 8, kSuperBlock, back.data());
    double sum = 0;
    for (size_t i = 0; i < values.size(); ++i) sum += std::pow(back[i] - values[i], 2.0);
    return std::sqrt(sum / static_cast<double>(values.size()));
  };
  const double q4 = rms_error(DType::kQ4_K), q5 = rms_error(DType::kQ5_K), q6 = rms_error(DType::kQ6_K);
  EXPECT_LT(q5, 0.6 * q4);
  EXPECT_LT(q6, 0.6 * q5);
  EXPECT_LT(q4, 0.02 * 0.15);  // a 4-bit code of a Gaussian: about range/15/sqrt(12) ≈ 0.1 σ
}

TEST(Quantize, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<float> values(300);
  EXPECT_THROW(quantize_rows(DType::kQ6_K, values.data(), 1, 300), std::invalid_argument);
  EXPECT_THROW(quantize_rows(DType::kQ4_0, values.data(), 1, 48), std::invalid_argument);
}

}  // namespace
}  // namespace star::quant
