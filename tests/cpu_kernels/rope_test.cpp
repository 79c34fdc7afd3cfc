// RopeTable and apply_rope against formulas written from HF transformers' definitions
// (`_compute_default_rope_parameters`, `_compute_llama3_parameters`, `apply_rotary_pos_emb`).
#include "star/backend/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "cpu_kernels/attention_reference.h"
#include "support/llama_cpp_rope_factors.h"

namespace star {
namespace {

RopeScaling llama31_scaling() {
  RopeScaling s;
  s.type = RopeScaling::Type::kLlama3;
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  return s;
}

enum class Band { kHigh, kMedium, kLow };

// HF's llama3 rule in double precision: keep high frequencies, divide low ones by factor,
// interpolate in between.
double reference_inv_freq(int64_t i, int64_t d, double theta, const RopeScaling& s, Band* band) {
  const double inv = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(d));
  *band = Band::kHigh;
  if (s.type != RopeScaling::Type::kLlama3) return inv;
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  const double wavelen = 2 * std::numbers::pi / inv;
  if (wavelen < old_len / s.high_freq_factor) return inv;
  if (wavelen > old_len / s.low_freq_factor) {
    *band = Band::kLow;
    return inv / s.factor;
  }
  *band = Band::kMedium;
  const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1 - smooth) * inv / s.factor + smooth * inv;
}

TEST(RopeTable, DefaultFrequencies) {
  for (int64_t d : {8, 64, 128}) {
    auto table = cpu::RopeTable::create(d, 10000.0, RopeScaling{});
    ASSERT_TRUE(table.ok()) << table.status().to_string();
    ASSERT_EQ(table->inv_freq().size(), static_cast<size_t>(d / 2));
    Band band;
    for (int64_t i = 0; i < d / 2; ++i) {
      const double expect = reference_inv_freq(i, d, 10000.0, RopeScaling{}, &band);
      EXPECT_NEAR(table->inv_freq()[static_cast<size_t>(i)], expect, 2e-6 * expect) << "i " << i;
    }
  }
}

TEST(RopeTable, Llama3ScalingCoversAllThreeBands) {
  const RopeScaling s = llama31_scaling();
  auto table = cpu::RopeTable::create(128, 500000.0, s);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  int counts[3] = {0, 0, 0};
  for (int64_t i = 0; i < 64; ++i) {
    Band band;
    const double expect = reference_inv_freq(i, 128, 500000.0, s, &band);
    ++counts[static_cast<int>(band)];
    EXPECT_NEAR(table->inv_freq()[static_cast<size_t>(i)], expect, 2e-6 * expect) << "i " << i;
  }
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
}

TEST(RopeTable, Llama3FrequenciesEqualHfBitForBit) {
  // transformers 4.44.2 + torch 1.13, Llama 3.1 8B's rope parameters, printed with float.hex():
  //   cfg = LlamaConfig(hidden_size=4096, num_attention_heads=32, rope_theta=500000.0,
  //       rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
  //                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
  //   inv_freq, _ = ROPE_INIT_FUNCTIONS["llama3"](cfg, "cpu")
  const float hf_inv_freq[64] = {
      0x1.0p+0f, 0x1.a11582p-1f, 0x1.53c38cp-1f, 0x1.14c708p-1f, 0x1.c2ef78p-2f, 0x1.6f56fap-2f,
      0x1.2b3dc6p-2f, 0x1.e788c2p-3f, 0x1.8d276p-3f, 0x1.43874p-3f, 0x1.078d4p-3f, 0x1.ad6338p-4f,
      0x1.5dc95ap-4f, 0x1.1cf13p-4f, 0x1.d03ccep-5f, 0x1.7a2d08p-5f, 0x1.34119p-5f, 0x1.f5ea7ep-6f,
      0x1.98de92p-6f, 0x1.4d1272p-6f, 0x1.0f5386p-6f, 0x1.ba0dd8p-7f, 0x1.681adap-7f,
      0x1.2558fep-7f, 0x1.ddee9ep-8f, 0x1.8554ecp-8f, 0x1.3d2804p-8f, 0x1.025c6ap-8f, 0x1.a4ee4p-9f,
      0x1.1bfa0cp-9f, 0x1.67a23ap-10f, 0x1.c12f3cp-11f, 0x1.132ba4p-11f, 0x1.47e21p-12f,
      0x1.765ba4p-13f, 0x1.90d10cp-14f, 0x1.46831ap-14f, 0x1.09fb7ep-14f, 0x1.b15902p-15f,
      0x1.610332p-15f, 0x1.1f91fp-15f, 0x1.d484dep-16f, 0x1.7da9e8p-16f, 0x1.36e8eap-16f,
      0x1.fa8b86p-17f, 0x1.9ca3eap-17f, 0x1.5024d6p-17f, 0x1.11d41ep-17f, 0x1.be2188p-18f,
      0x1.6b6d0ep-18f, 0x1.280d96p-18f, 0x1.e257p-19f, 0x1.88ec2p-19f, 0x1.4014d2p-19f,
      0x1.04be68p-19f, 0x1.a8d01p-20f, 0x1.5a0f4ep-20f, 0x1.19e8p-20f, 0x1.cb4a9ap-21f,
      0x1.76258ep-21f, 0x1.30c94ep-21f, 0x1.f09184p-22f, 0x1.94836p-22f, 0x1.4985fep-22f};
  auto table = cpu::RopeTable::create(128, 500000.0, llama31_scaling());
  ASSERT_TRUE(table.ok());
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(table->inv_freq()[i], hf_inv_freq[i]) << "i " << i;
}

// The rotation of HF's apply_rotary_pos_emb, given the table's float32 frequencies: the angle is
// the float32 product position * inv_freq (HF computes freqs in float32), cos and sin are exact.
std::vector<double> reference_rope(const std::vector<float>& x, int64_t n_heads, int64_t d,
                                   const std::vector<int32_t>& positions,
                                   std::span<const float> inv_freq, RopeLayout layout) {
  std::vector<double> y(x.begin(), x.end());
  const int64_t half = d / 2;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const size_t row = (t * static_cast<size_t>(n_heads) + static_cast<size_t>(h)) * static_cast<size_t>(d);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[static_cast<size_t>(i)];
        const size_t a = row + static_cast<size_t>(layout == RopeLayout::kHalf ? i : 2 * i);
        const size_t b = row + static_cast<size_t>(layout == RopeLayout::kHalf ? i + half : 2 * i + 1);
        const double c = std::cos(static_cast<double>(angle));
        const double s = std::sin(static_cast<double>(angle));
        y[a] = x[a] * c - x[b] * s;
        y[b] = x[b] * c + x[a] * s;
      }
    }
  }
  return y;
}

TEST(ApplyRope, BothLayoutsMatchReferenceUpToLongPositions) {
  std::mt19937 rng(4);
  const std::vector<int32_t> positions{0, 1, 7, 100, 4095, 8191, 131071, 1048575};
  for (const RopeScaling& scaling : {RopeScaling{}, llama31_scaling()}) {
    for (int64_t d : {8, 64, 128}) {
      for (RopeLayout layout : {RopeLayout::kHalf, RopeLayout::kAdjacent}) {
        SCOPED_TRACE(::testing::Message() << "d " << d << " layout " << static_cast<int>(layout)
                                          << " scaled " << (scaling.type != RopeScaling::Type::kNone));
        auto table = cpu::RopeTable::create(d, 500000.0, scaling);
        ASSERT_TRUE(table.ok());
        const int64_t heads = 3;
        auto x = testing::random_tensor(positions.size() * heads * d, rng, -2, 2);
        const auto expect = reference_rope(x, heads, d, positions, table->inv_freq(), layout);
        cpu::apply_rope(x.data(), static_cast<int64_t>(positions.size()), heads, d, positions.data(),
                        *table, layout);
        for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], expect[i], 2e-6) << "element " << i;
      }
    }
  }
}

TEST(ApplyRope, SmallPositionsMatchExactRotation) {
  // Against the exact rotation with double-precision frequencies: float32 angles stay accurate
  // while positions are small.
  const int64_t d = 64;
  auto table = cpu::RopeTable::create(d, 10000.0, RopeScaling{});
  ASSERT_TRUE(table.ok());
  std::mt19937 rng(5);
  std::vector<int32_t> positions(50);
  for (int32_t p = 0; p < 50; ++p) positions[static_cast<size_t>(p)] = p;
  auto x = testing::random_tensor(positions.size() * d, rng);
  const auto x0 = x;
  cpu::apply_rope(x.data(), 50, 1, d, positions.data(), *table, RopeLayout::kHalf);
  for (int32_t p = 0; p < 50; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      Band band;
      const double angle = p * reference_inv_freq(i, d, 10000.0, RopeScaling{}, &band);
      const size_t a = static_cast<size_t>(p * d + i);
      const size_t b = a + static_cast<size_t>(d / 2);
      EXPECT_NEAR(x[a], x0[a] * std::cos(angle) - x0[b] * std::sin(angle), 1e-5);
      EXPECT_NEAR(x[b], x0[b] * std::cos(angle) + x0[a] * std::sin(angle), 1e-5);
    }
  }
}

TEST(ApplyRope, AdjacentLayoutIsHalfLayoutOnInterleavedRows) {
  // A GGUF row stores pair i at (2i, 2i+1); HF stores it at (i, i + d/2). Same rotation.
  const int64_t d = 16, heads = 2, tokens = 3;
  auto table = cpu::RopeTable::create(d, 10000.0, llama31_scaling());
  ASSERT_TRUE(table.ok());
  std::mt19937 rng(6);
  auto half = testing::random_tensor(static_cast<size_t>(tokens * heads * d), rng);
  std::vector<float> adjacent(half.size());
  for (int64_t row = 0; row < tokens * heads; ++row) {
    for (int64_t i = 0; i < d / 2; ++i) {
      adjacent[static_cast<size_t>(row * d + 2 * i)] = half[static_cast<size_t>(row * d + i)];
      adjacent[static_cast<size_t>(row * d + 2 * i + 1)] = half[static_cast<size_t>(row * d + i + d / 2)];
    }
  }
  const std::vector<int32_t> positions{3, 9000, 70000};
  cpu::apply_rope(half.data(), tokens, heads, d, positions.data(), *table, RopeLayout::kHalf);
  cpu::apply_rope(adjacent.data(), tokens, heads, d, positions.data(), *table, RopeLayout::kAdjacent);
  for (int64_t row = 0; row < tokens * heads; ++row) {
    for (int64_t i = 0; i < d / 2; ++i) {
      EXPECT_EQ(adjacent[static_cast<size_t>(row * d + 2 * i)], half[static_cast<size_t>(row * d + i)]);
      EXPECT_EQ(adjacent[static_cast<size_t>(row * d + 2 * i + 1)], half[static_cast<size_t>(row * d + i + d / 2)]);
    }
  }
}

TEST(RopeTable, GgufFrequencyFactorsGiveTheLlama3Table) {
  const RopeScaling llama3 = llama31_scaling();
  auto table = cpu::RopeTable::create(128, 500000.0, testing::as_gguf_freq_factors(128, 500000.0, llama3));
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  int counts[3] = {0, 0, 0};
  for (int64_t i = 0; i < 64; ++i) {
    Band band;
    const double expect = reference_inv_freq(i, 128, 500000.0, llama3, &band);
    ++counts[static_cast<int>(band)];
    EXPECT_NEAR(table->inv_freq()[static_cast<size_t>(i)], expect, 2e-6 * expect) << "i " << i;
  }
  EXPECT_GT(counts[1], 0);  // the interpolated band, where the factors are not 1 or `factor`
  EXPECT_GT(counts[2], 0);
}

TEST(RopeTable, RejectsBadParameters) {
  auto expect_error = [](const Result<cpu::RopeTable>& r, const std::string& field) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  expect_error(cpu::RopeTable::create(7, 10000.0, {}), "head_dim");
  expect_error(cpu::RopeTable::create(0, 10000.0, {}), "head_dim");
  expect_error(cpu::RopeTable::create(64, 0.0, {}), "rope_theta");
  expect_error(cpu::RopeTable::create(64, std::nan(""), {}), "rope_theta");
  RopeScaling s = llama31_scaling();
  s.factor = 0;
  expect_error(cpu::RopeTable::create(64, 10000.0, s), "factor");
  s = llama31_scaling();
  s.high_freq_factor = s.low_freq_factor;
  expect_error(cpu::RopeTable::create(64, 10000.0, s), "high_freq_factor");
  s = llama31_scaling();
  s.original_max_position_embeddings = 0;
  expect_error(cpu::RopeTable::create(64, 10000.0, s), "original_max_position_embeddings");
  RopeScaling factors;
  factors.type = RopeScaling::Type::kFreqFactors;
  factors.freq_factors = {1.0f, 2.0f};
  expect_error(cpu::RopeTable::create(8, 10000.0, factors), "2 frequency factors for 4 frequencies");
  factors.freq_factors = {1.0f, 2.0f, 0.0f, 8.0f};
  expect_error(cpu::RopeTable::create(8, 10000.0, factors), "frequency factor 2");
}

}  // namespace
}  // namespace star
