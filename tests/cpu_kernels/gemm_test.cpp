// matmul_nt against a naive double-precision loop.
#include "star/backend/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cpu_kernels/attention_reference.h"

namespace star {
namespace {

// y[n, m] = x[n, k] . w[m, k]^T in double, plus the magnitude sum |x||w| that bounds float error.
void naive_matmul_nt(const std::vector<float>& x, int64_t n, int64_t k, const std::vector<float>& w,
                     int64_t m, std::vector<double>& y, std::vector<double>& magnitude) {
  y.assign(static_cast<size_t>(n * m), 0.0);
  magnitude.assign(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t c = 0; c < k; ++c) {
        const double a = x[static_cast<size_t>(i * k + c)];
        const double b = w[static_cast<size_t>(j * k + c)];
        y[static_cast<size_t>(i * m + j)] += a * b;
        magnitude[static_cast<size_t>(i * m + j)] += std::abs(a * b);
      }
    }
  }
}

TEST(MatmulNt, MatchesNaiveLoop) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 3, 17, 64}) {
    for (int64_t k : {1, 64, 130}) {
      for (int64_t m : {5, 33, 256}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " k=" << k << " m=" << m);
        const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
        const auto w = testing::random_tensor(static_cast<size_t>(m * k), rng);
        std::vector<float> y(static_cast<size_t>(n * m), 99.f);
        cpu::matmul_nt(x.data(), n, k, w.data(), m, y.data());
        std::vector<double> ref, magnitude;
        naive_matmul_nt(x, n, k, w, m, ref, magnitude);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], ref[i], 1e-6 * magnitude[i] + 1e-7) << "element " << i;
        }
      }
    }
  }
}

TEST(MatmulNt, AccumulateAddsToOutput) {
  std::mt19937 rng(8);
  for (int64_t n : {1, 5}) {
    const int64_t k = 40, m = 24;
    const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
    const auto w = testing::random_tensor(static_cast<size_t>(m * k), rng);
    const auto y0 = testing::random_tensor(static_cast<size_t>(n * m), rng);
    std::vector<float> y = y0;
    cpu::matmul_nt(x.data(), n, k, w.data(), m, y.data(), /*accumulate=*/true);
    std::vector<double> ref, magnitude;
    naive_matmul_nt(x, n, k, w, m, ref, magnitude);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], y0[i] + ref[i], 1e-6 * (magnitude[i] + std::abs(y0[i])) + 1e-7);
    }
  }
}

TEST(MatmulNt, EmptyInnerDimensionGivesZeroOrKeepsOutput) {
  const float unused = 0.f;
  for (int64_t n : {1, 3}) {
    std::vector<float> y(static_cast<size_t>(n * 4), 5.f);
    cpu::matmul_nt(&unused, n, 0, &unused, 4, y.data(), /*accumulate=*/true);
    for (float v : y) EXPECT_EQ(v, 5.f);
    cpu::matmul_nt(&unused, n, 0, &unused, 4, y.data());
    for (float v : y) EXPECT_EQ(v, 0.f);
  }
}

}  // namespace
}  // namespace star
