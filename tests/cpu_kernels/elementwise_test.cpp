// rms_norm, swiglu and embedding_lookup against direct double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/random_weights.h"
#include "star/backend/cpu/embedding.h"
#include "star/backend/cpu/rms_norm.h"
#include "star/backend/cpu/swiglu.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

TEST(RmsNorm, MatchesFormula) {
  std::mt19937 rng(1);
  for (int64_t dim : {1, 7, 64, 260, 4096}) {
    const int64_t n = 5;
    auto x = testing::random_tensor(static_cast<size_t>(n * dim), rng, -3, 3);
    x[0] = 0.f;
    const auto w = testing::random_tensor(static_cast<size_t>(dim), rng, 0.5f, 1.5f);
    const float eps = 1e-5f;
    std::vector<float> y(x.size());
    cpu::rms_norm(x.data(), n, dim, w.data(), eps, y.data());
    for (int64_t r = 0; r < n; ++r) {
      double sq = 0;
      for (int64_t i = 0; i < dim; ++i) sq += static_cast<double>(x[static_cast<size_t>(r * dim + i)]) * x[static_cast<size_t>(r * dim + i)];
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) {
        const size_t at = static_cast<size_t>(r * dim + i);
        const double expect = x[at] * inv * w[static_cast<size_t>(i)];
        ASSERT_NEAR(y[at], expect, 2e-6 * std::abs(expect) + 1e-7) << "dim " << dim << " at " << at;
      }
    }
    // In place gives the same result.
    cpu::rms_norm(x.data(), n, dim, w.data(), eps, x.data());
    EXPECT_EQ(x, y);
  }
}

TEST(RmsNorm, AllZeroRowUsesEpsilon) {
  const std::vector<float> x(16, 0.f), w(16, 1.f);
  std::vector<float> y(16, 1.f);
  cpu::rms_norm(x.data(), 1, 16, w.data(), 1e-6f, y.data());
  for (float v : y) EXPECT_EQ(v, 0.f);
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

TEST(Swiglu, MatchesFormulaOverWideRange) {
  std::mt19937 rng(2);
  for (int64_t n : {1, 8, 13, 1000, 70000}) {
    auto gate = testing::random_tensor(static_cast<size_t>(n), rng, -30, 30);
    const auto up = testing::random_tensor(static_cast<size_t>(n), rng, -2, 2);
    std::vector<float> out(static_cast<size_t>(n));
    cpu::swiglu(gate.data(), up.data(), n, out.data());
    for (size_t i = 0; i < out.size(); ++i) {
      const double expect = silu(gate[i]) * up[i];
      ASSERT_NEAR(out[i], expect, 1e-6 * std::abs(expect) + 1e-30) << "gate " << gate[i];
    }
  }
}

TEST(Swiglu, ExtremeGatesStayFinite) {
  const std::vector<float> gate{-1000.f, -100.f, -88.f, -87.f, 0.f, 87.f, 89.f, 100.f, 1000.f};
  const std::vector<float> up(gate.size(), 1.5f);
  std::vector<float> out(gate.size());
  cpu::swiglu(gate.data(), up.data(), static_cast<int64_t>(gate.size()), out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out[i])) << "gate " << gate[i];
    EXPECT_NEAR(out[i], silu(gate[i]) * 1.5, 1e-6 * std::abs(silu(gate[i]) * 1.5) + 1e-30)
        << "gate " << gate[i];
  }
}

TEST(Swiglu, InPlaceOverGate) {
  std::mt19937 rng(3);
  auto gate = testing::random_tensor(100, rng, -5, 5);
  const auto up = testing::random_tensor(100, rng);
  std::vector<float> expect(100);
  cpu::swiglu(gate.data(), up.data(), 100, expect.data());
  cpu::swiglu(gate.data(), up.data(), 100, gate.data());
  EXPECT_EQ(gate, expect);
}

TEST(EmbeddingLookup, GathersRows) {
  const int64_t vocab = 6, dim = 3;
  std::vector<float> table(static_cast<size_t>(vocab * dim));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  const std::vector<int32_t> ids{5, 0, 5, 2};
  const std::vector<float> expect{15, 16, 17, 0, 1, 2, 15, 16, 17, 6, 7, 8};
  // Small integers are exact in every plain type.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<std::byte> bytes = encode_from_f32(table, dtype);
    std::vector<float> out(ids.size() * dim);
    cpu::embedding_lookup(testing::weight_over(dtype, bytes, vocab, dim), ids.data(), static_cast<int64_t>(ids.size()),
                          out.data());
    EXPECT_EQ(out, expect) << dtype_name(dtype);
  }
}

TEST(EmbeddingLookup, WidensOnlyTheLookedUpBlockRows) {
  const int64_t vocab = 5, dim = 64;
  std::mt19937 rng(3);
  const std::vector<int32_t> ids{4, 1, 1};
  for (DType dtype : {DType::kQ4_0, DType::kQ8_0, DType::kQ5_1}) {
    const std::vector<std::byte> bytes = testing::random_weight_rows(dtype, vocab, dim, rng);
    std::vector<float> all(static_cast<size_t>(vocab * dim));
    quant::dequantize_rows(dtype, bytes.data(), vocab, dim, all.data());
    std::vector<float> out(ids.size() * dim), expect;
    for (int32_t id : ids) expect.insert(expect.end(), all.begin() + id * dim, all.begin() + (id + 1) * dim);
    cpu::embedding_lookup(testing::weight_over(dtype, bytes, vocab, dim), ids.data(), static_cast<int64_t>(ids.size()),
                          out.data());
    EXPECT_EQ(out, expect) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace star
