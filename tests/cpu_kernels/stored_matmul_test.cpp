// cpu::matmul over weights of every stored type: up to row_dot_max_rows activation rows it equals
// the scalar version of its row-dot kernel (few_rows_kernel) element by element (up to
// re-association), and each row of the product is that row's product alone, bit for bit; past it,
// the types the int8 panels take on AVX-512 equal the same scalar row dots (their activations are
// rounded the same way) and each row does not depend on its place in the product; the other types,
// and every type on AVX2, equal sgemm on the dequantized weight (up to float rounding), as do the
// types without a row-dot kernel at any row count. matmul_wide_activations equals that sgemm at
// every row count (up to its Q16 rounding where it has a Q16 kernel); matmul_shared_input equals
// one matmul per weight. Q8_0 weights with panels packed once multiply in them at every row count,
// bit for bit as the panels packed per call, and take matmul_wide_activations' few rows in them with
// Q16 codes, as the scalar Q16 row dot.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/random_weights.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/backend/cpu/gemm.h"
#include "star/backend/cpu/matmul.h"
#include "star/model/dtype.h"
#include "star/quant/blocks.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

const DType kAllStoredTypes[] = {DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                                 DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

struct Case {
  std::vector<std::byte> bytes;
  WeightTensor w;
  std::vector<float> w_hat;  // the weight dequantized
};

Case random_case(DType type, int64_t m, int64_t k, std::mt19937& rng) {
  Case c;
  c.bytes = testing::random_weight_rows(type, m, k, rng);
  c.w = testing::weight_over(type, c.bytes, m, k);
  c.w_hat.resize(static_cast<size_t>(m * k));
  quant::dequantize_rows(type, c.bytes.data(), m, k, c.w_hat.data());
  return c;
}

// Σ_c |x[i, c] · ŵ[j, c]| for each output: the scale float rounding of a sum of k products has
// (computed as |x|·|ŵ|ᵀ with sgemm, itself good to far better than the tolerances it sets).
std::vector<double> magnitudes(const std::vector<float>& x, int64_t n, const Case& c, int64_t m, int64_t k) {
  std::vector<float> x_abs(x.size()), w_abs(c.w_hat.size()), out(static_cast<size_t>(n * m));
  for (size_t i = 0; i < x.size(); ++i) x_abs[i] = std::fabs(x[i]);
  for (size_t i = 0; i < c.w_hat.size(); ++i) w_abs[i] = std::fabs(c.w_hat[i]);
  cpu::matmul_nt(x_abs.data(), n, k, w_abs.data(), m, out.data());
  return std::vector<double>(out.begin(), out.end());
}

// matmul of n rows against the scalar row dot of its kernel's activation type, each output.
void expect_scalar_row_dots(DType type, const cpu::DotKernel& scalar, const Case& c, int64_t m, int64_t k,
                            std::initializer_list<int64_t> row_counts, std::mt19937& rng) {
  for (int64_t n : row_counts) {
    for (bool accumulate : {false, true}) {
      const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
      const auto y0 = testing::random_tensor(static_cast<size_t>(n * m), rng);
      std::vector<float> y = y0;
      cpu::matmul(x.data(), n, c.w, y.data(), accumulate);
      const auto mag = magnitudes(x, n, c, m, k);
      std::vector<std::byte> xq(cpu::activation_row_bytes(scalar.activation_type, k));
      for (int64_t i = 0; i < n; ++i) {
        cpu::quantize_activation_row(scalar.activation_type, x.data() + i * k, k, xq.data());
        for (int64_t j = 0; j < m; ++j) {
          const float want =
              scalar.dot(c.bytes.data() + j * c.w.row_bytes(), xq.data(), k) + (accumulate ? y0[i * m + j] : 0.f);
          // Re-association of the k/block (or k) float sums, with the activation rounding's
          // slack on the magnitude (the kernels sum ŵ·x̂, not ŵ·x).
          const double tolerance = (static_cast<double>(k) + 16) * std::ldexp(1.0, -23) * 1.1 * mag[i * m + j] +
                                   std::ldexp(1.0, -23) * std::fabs(y0[i * m + j]);
          ASSERT_NEAR(y[i * m + j], want, tolerance) << dtype_name(type) << " n=" << n << " [" << i << "," << j << "]";
        }
      }
    }
  }
}

TEST(StoredMatmul, FewRowsEqualTheScalarRowDot) {
  std::mt19937 rng(21);
  const int64_t m = 70, k = 256;
  for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ4_K,
                     DType::kQ5_K, DType::kQ6_K, DType::kF16, DType::kBF16}) {
    const cpu::DotKernel* scalar = cpu::few_rows_kernel(type, cpu::Isa::kScalar);
    ASSERT_NE(scalar, nullptr);
    const Case c = random_case(type, m, k, rng);
    const int64_t limit = cpu::row_dot_max_rows(*cpu::few_rows_kernel(type, cpu::best_isa()));
    expect_scalar_row_dots(type, *scalar, c, m, k, {int64_t{1}, int64_t{3}, cpu::kRowDotMaxRows, limit}, rng);
  }
}

const DType kPanelTypes[] = {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

// Many rows on the int8 panels: Q8_0 activations, as the scalar row dots of these types take them;
// m = 70 is two whole 32-row tiles and 6 rows of a third, the row counts whole and partial
// 6-row tiles.
TEST(StoredMatmul, ManyRowsOnInt8PanelsEqualTheScalarRowDot) {
  std::mt19937 rng(29);
  const int64_t m = 70, k = 512;
  for (DType type : kPanelTypes) {
    if (!cpu::int8_panels_for(type, cpu::best_isa())) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    const cpu::DotKernel* scalar = cpu::find_dot_kernel(type, cpu::Isa::kScalar);
    ASSERT_NE(scalar, nullptr);
    ASSERT_EQ(scalar->activation_type, cpu::ActivationType::kQ8_0);
    const Case c = random_case(type, m, k, rng);
    const int64_t limit = cpu::row_dot_max_rows(*cpu::few_rows_kernel(type, cpu::best_isa()));
    expect_scalar_row_dots(type, *scalar, c, m, k, {limit + 1, limit + 6, 100}, rng);
  }
}

// And each output is computed by the same instructions wherever its row falls in the product:
// rows [s, s + n) of one call equal rows [0, n) of a call on them alone, bit for bit.
TEST(StoredMatmul, Int8PanelRowsDoNotDependOnTheirPlace) {
  std::mt19937 rng(31);
  const int64_t m = 70, k = 512, total = 80;
  for (DType type : kPanelTypes) {
    if (!cpu::int8_panels_for(type, cpu::best_isa())) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    const Case c = random_case(type, m, k, rng);
    const auto x = testing::random_tensor(static_cast<size_t>(total * k), rng);
    std::vector<float> all(static_cast<size_t>(total * m));
    cpu::matmul(x.data(), total, c.w, all.data());
    for (int64_t start : {int64_t{1}, int64_t{5}, int64_t{13}}) {
      const int64_t n = total - start - 7;
      std::vector<float> part(static_cast<size_t>(n * m));
      cpu::matmul(x.data() + start * k, n, c.w, part.data());
      for (int64_t e = 0; e < n * m; ++e) {
        ASSERT_EQ(std::bit_cast<uint32_t>(part[e]), std::bit_cast<uint32_t>(all[start * m + e]))
            << dtype_name(type) << " rows from " << start << ", element " << e;
      }
    }
  }
}

// Batch invariance: up to the row-dot limit (for matmul, the rows_multiplied_alike it promises),
// row i of a product of n rows is bit for bit the product of row i alone (what lets a batched decode
// step answer as each request alone), for the types with a register tile, whose outputs sit at
// different tile positions as n changes, and one without.
TEST(StoredMatmul, EachRowEqualsItsProductAloneBitForBit) {
  std::mt19937 rng(27);
  const int64_t m = 70, k = 256;
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K}) {
    const Case c = random_case(type, m, k, rng);
    for (bool wide_activations : {false, true}) {
      const cpu::DotKernel* kernel = wide_activations ? cpu::wide_activation_kernel(type, cpu::best_isa())
                                                      : cpu::few_rows_kernel(type, cpu::best_isa());
      if (kernel == nullptr) continue;
      const int64_t limit = cpu::row_dot_max_rows(*kernel);
      if (!wide_activations) ASSERT_EQ(cpu::rows_multiplied_alike(c.w), limit) << dtype_name(type);
      const auto x = testing::random_tensor(static_cast<size_t>(limit * k), rng);
      auto product = [&](const float* rows, int64_t n) {
        std::vector<float> y(static_cast<size_t>(n * m));
        if (wide_activations) {
          cpu::matmul_wide_activations(rows, n, c.w, y.data());
        } else {
          cpu::matmul(rows, n, c.w, y.data());
        }
        return y;
      };
      std::vector<std::vector<float>> alone;
      for (int64_t i = 0; i < limit; ++i) alone.push_back(product(x.data() + i * k, 1));
      for (int64_t n = 2; n <= limit; ++n) {
        const std::vector<float> y = product(x.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < m; ++j) {
            ASSERT_EQ(std::bit_cast<uint32_t>(y[i * m + j]), std::bit_cast<uint32_t>(alone[i][j]))
                << dtype_name(type) << (wide_activations ? " wide" : "") << " n=" << n << " [" << i << "," << j << "]";
          }
        }
      }
    }
  }
}

// Panels packed once (prelay_weight: Q8_0 on AVX-512 VNNI) are the panels int8_panel_matmul packs
// every call, so each output equals that path's bit for bit, at any row count, accumulating or not;
// m = 70 leaves the last 32-row unit 6 rows, n runs over whole and partial 6-row tiles.
TEST(StoredMatmul, PrelaidPanelsAreThePanelsPackedPerCallBitForBit) {
  std::mt19937 rng(33);
  const int64_t m = 70, k = 512;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  // And, now that they serve one-row decode too, the scalar Q8_0 row dot at few rows as at many.
  expect_scalar_row_dots(DType::kQ8_0, *cpu::find_dot_kernel(DType::kQ8_0, cpu::Isa::kScalar), c, m, k,
                         {1, 3, 16, 33}, rng);
  for (int64_t n : {1, 2, 5, 6, 7, 33, 100}) {
    for (bool accumulate : {false, true}) {
      const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
      const auto y0 = testing::random_tensor(static_cast<size_t>(n * m), rng);
      std::vector<float> got = y0, want(static_cast<size_t>(n * m));
      cpu::matmul(x.data(), n, c.w, got.data(), accumulate);
      cpu::matmul_forced(cpu::MatmulPath::kInt8Panels, x.data(), n, c.w, want.data(), false);
      for (int64_t e = 0; e < n * m; ++e) {
        const float expected = accumulate ? y0[e] + want[e] : want[e];
        ASSERT_EQ(std::bit_cast<uint32_t>(got[e]), std::bit_cast<uint32_t>(expected))
            << "n=" << n << (accumulate ? " accumulating" : "") << ", element " << e;
      }
    }
  }
}

// Rows handed over as Q8_0 blocks (column sharing's SwiGLU output, each rank rounding its own
// columns) give the product of the float rows bit for bit, on the whole weight and on a slice of
// its rows from a panel edge, accumulating or not; a weight without panels does not take blocks.
TEST(StoredMatmul, RowsRoundedToQ8BlocksInPiecesEqualTheFloatRows) {
  std::mt19937 rng(39);
  const int64_t m = 70, k = 512, blocks = k / quant::kLegacyBlock;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  EXPECT_FALSE(cpu::matmul_reads_q8_0_blocks(c.w));
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  EXPECT_TRUE(cpu::matmul_reads_q8_0_blocks(c.w));
  const WeightTensor slice = weight_rows(c.w, 32, 38);
  for (int64_t n : {1, 6, 16, 33}) {
    const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
    // Each row rounded in two pieces, cut at block 5.
    std::vector<quant::BlockQ8_0> q(static_cast<size_t>(n * blocks));
    for (int64_t i = 0; i < n; ++i) {
      for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 5}, {5, blocks - 5}}) {
        cpu::quantize_activation_row(cpu::ActivationType::kQ8_0, x.data() + i * k + first * quant::kLegacyBlock,
                                     count * quant::kLegacyBlock,
                                     reinterpret_cast<std::byte*>(q.data() + i * blocks + first));
      }
    }
    for (const WeightTensor* w : {static_cast<const WeightTensor*>(&c.w), &slice}) {
      for (bool accumulate : {false, true}) {
        const auto y0 = testing::random_tensor(static_cast<size_t>(n * w->rows()), rng);
        std::vector<float> got = y0, want = y0;
        cpu::matmul_q8_0_rows(q.data(), n, *w, got.data(), accumulate);
        cpu::matmul(x.data(), n, *w, want.data(), accumulate);
        for (size_t e = 0; e < want.size(); ++e) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[e]), std::bit_cast<uint32_t>(want[e]))
              << "n=" << n << ", " << w->rows() << " rows" << (accumulate ? ", accumulating" : "") << ", element " << e;
        }
      }
    }
  }
}

// The m outputs of each of x's first `count` rows (k elements each) multiplied alone:
// product(row, y) writes one row's.
template <class Product>
std::vector<std::vector<float>> rows_alone(const std::vector<float>& x, int64_t count, int64_t k, int64_t m,
                                           Product product) {
  std::vector<std::vector<float>> alone;
  for (int64_t i = 0; i < count; ++i) {
    alone.emplace_back(static_cast<size_t>(m));
    product(x.data() + i * k, alone.back().data());
  }
  return alone;
}

// One kernel at every row count: row i of a product of n rows is row i's product alone, bit for
// bit, past the row tiles' limit too (a fused step of decode rows and a Phase 1 chunk).
TEST(StoredMatmul, PrelaidRowsEqualTheirProductAloneAtAnyRowCount) {
  std::mt19937 rng(35);
  const int64_t m = 70, k = 256, most = 2 * cpu::kRowTileMaxRows + 5;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  const auto x = testing::random_tensor(static_cast<size_t>(most * k), rng);
  const auto alone = rows_alone(x, most, k, m, [&](const float* row, float* y) { cpu::matmul(row, 1, c.w, y); });
  for (int64_t n : {int64_t{2}, int64_t{16}, cpu::kRowTileMaxRows + 1, most}) {
    std::vector<float> y(static_cast<size_t>(n * m));
    cpu::matmul(x.data(), n, c.w, y.data());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i * m + j]), std::bit_cast<uint32_t>(alone[i][j]))
            << "n=" << n << " [" << i << "," << j << "]";
      }
    }
  }
}

// A view of a prelaid weight's rows from a panel edge (weight_rows, as column sharing takes them)
// keeps the panels: its outputs are those columns of the whole product, bit for bit, alone or beside
// other slices in one call; a view off the panel edges is multiplied as stored.
TEST(StoredMatmul, PrelaidRowSlicesAreColumnsOfTheWholeBitForBit) {
  std::mt19937 rng(37);
  const int64_t m = 150, k = 256;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  EXPECT_EQ(weight_rows(c.w, 5, 16).panels, nullptr);
  for (int64_t n : {1, 7, 16}) {
    const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
    std::vector<float> whole(static_cast<size_t>(n * m));
    cpu::matmul(x.data(), n, c.w, whole.data());
    const std::pair<int64_t, int64_t> slices[] = {{0, 64}, {64, 86}, {32, 16}, {96, 0}};
    std::vector<std::vector<float>> parts, together;
    std::vector<WeightTensor> views;
    for (const auto& [first, count] : slices) {
      views.push_back(weight_rows(c.w, first, count));
      ASSERT_NE(views.back().panels, nullptr);
      parts.emplace_back(static_cast<size_t>(n * count), -1.f);
      together.emplace_back(static_cast<size_t>(n * count), -1.f);
      cpu::matmul(x.data(), n, views.back(), parts.back().data());
    }
    cpu::matmul_shared_input(x.data(), n, {{&views[0], together[0].data()}, {&views[1], together[1].data()},
                                           {&views[2], together[2].data()}, {&views[3], together[3].data()}});
    for (size_t s = 0; s < std::size(slices); ++s) {
      const auto [first, count] = slices[s];
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < count; ++j) {
          const uint32_t want = std::bit_cast<uint32_t>(whole[i * m + first + j]);
          ASSERT_EQ(std::bit_cast<uint32_t>(parts[s][i * count + j]), want)
              << "n=" << n << " rows [" << first << ", " << first + count << ") [" << i << "," << j << "]";
          ASSERT_EQ(std::bit_cast<uint32_t>(together[s][i * count + j]), want)
              << "shared input, n=" << n << " rows [" << first << ", " << first + count << ") [" << i << "," << j << "]";
        }
      }
    }
  }
}

std::vector<float> rounded_to_bf16(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(f32_to_bf16(v[i]));
  return out;
}

// Past kRowDotMaxRows, on a CPU with AVX512-BF16, a BF16 weight multiplies x rounded to bf16
// (oneDNN) and sums in float32: sgemm of the rounded operands up to re-association. Other types
// (those on the int8 panels aside, tested above), the ISA capped at AVX2, and few rows of the
// types without a row-dot kernel: sgemm of x and ŵ.
TEST(StoredMatmul, ManyRowsAndOtherTypesEqualSgemmOfTheDequantizedWeight) {
  std::mt19937 rng(22);
  // k = 4096 gives 512-row float32 tiles of 8 MiB: m = 1100 takes whole tiles and a partial one.
  const int64_t m = 1100, k = 4096;
  for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
    cpu::limit_isa(isa);
    const bool bf16_products = cpu::has_bf16_products();
    for (DType type : kAllStoredTypes) {
      const Case c = random_case(type, m, k, rng);
      const std::vector<float> w_bf16 = rounded_to_bf16(c.w_hat);
      const cpu::DotKernel* kernel = cpu::few_rows_kernel(type, cpu::best_isa());
      const int64_t limit = kernel != nullptr ? cpu::row_dot_max_rows(*kernel) : cpu::kRowDotMaxRows;
      std::vector<int64_t> row_counts = {limit + 1, limit + 3};
      // Few rows of a type without a row-dot kernel: rows widened in L1, float32 dots.
      if (cpu::few_rows_kernel(type, cpu::Isa::kScalar) == nullptr) row_counts.insert(row_counts.end(), {1, 3});
      for (int64_t n : row_counts) {
        if (n > limit && cpu::int8_panels_for(type, cpu::best_isa())) continue;
        const bool rounded = bf16_products && type == DType::kBF16 && n > limit;
        for (bool accumulate : {false, true}) {
          const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
          const auto y0 = testing::random_tensor(static_cast<size_t>(n * m), rng);
          std::vector<float> y = y0, want = y0;
          cpu::matmul(x.data(), n, c.w, y.data(), accumulate);
          cpu::matmul_nt(rounded ? rounded_to_bf16(x).data() : x.data(), n, k,
                         rounded ? w_bf16.data() : c.w_hat.data(), m, want.data(), accumulate);
          const auto mag = magnitudes(x, n, c, m, k);
          for (size_t e = 0; e < y.size(); ++e) {
            ASSERT_NEAR(y[e], want[e], 1e-6 * (mag[e] + std::fabs(y0[e])) + 1e-7)
                << dtype_name(type) << " " << cpu::isa_name(isa) << " n=" << n << " element " << e;
          }
        }
      }
    }
  }
  cpu::limit_isa(cpu::Isa::kAvx512);
}

// The output projection's product: at every row count, the types with row-dot kernels included,
// sgemm on the dequantized weight with x unrounded; where a Q16 kernel takes the few rows, up to
// its rounding too: each code is within 0.51·d = 0.51·max|x_block|/32767 of x/d (row_dot_test
// bounds it), so an output moves by at most that times Σ|ŵ| with the row's max|x|.
TEST(StoredMatmul, WideActivationsEqualSgemmOfTheDequantizedWeightAtAnyRowCount) {
  std::mt19937 rng(25);
  const int64_t m = 300, k = 512;
  for (DType type : kAllStoredTypes) {
    const Case c = random_case(type, m, k, rng);
    const cpu::DotKernel* kernel = cpu::wide_activation_kernel(type, cpu::best_isa());
    std::vector<double> w_abs(static_cast<size_t>(m), 0.0);
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t e = 0; e < k; ++e) w_abs[j] += std::fabs(c.w_hat[j * k + e]);
    }
    for (int64_t n : {int64_t{1}, int64_t{3}, cpu::kRowDotMaxRows, cpu::kRowDotMaxRows + 1, cpu::kRowTileMaxRows,
                      cpu::kRowTileMaxRows + 1}) {
      const bool q16 = kernel != nullptr && kernel->activation_type == cpu::ActivationType::kQ16 &&
                       n <= cpu::row_dot_max_rows(*kernel);
      const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
      std::vector<float> y(static_cast<size_t>(n * m), -1.f), want(y.size());
      cpu::matmul_wide_activations(x.data(), n, c.w, y.data());
      cpu::matmul_nt(x.data(), n, k, c.w_hat.data(), m, want.data());
      const auto mag = magnitudes(x, n, c, m, k);
      for (int64_t i = 0; i < n; ++i) {
        double x_max = 0;
        for (int64_t e = 0; e < k; ++e) x_max = std::max(x_max, std::fabs(static_cast<double>(x[i * k + e])));
        for (int64_t j = 0; j < m; ++j) {
          const size_t e = static_cast<size_t>(i * m + j);
          const double rounding = q16 ? 0.51 * x_max / 32767 * w_abs[j] : 0.0;
          ASSERT_NEAR(y[e], want[e], 1e-6 * mag[e] + 1e-7 + rounding) << dtype_name(type) << " n=" << n << " element " << e;
        }
      }
    }
  }
}

// The output projection split by vocabulary (each rank of a batched Phase 2 step takes a slice of
// the weight's rows, weight_rows): where a row-dot kernel runs (wide_activation_kernel, up to its
// row_dot_max_rows: a decode step's rows) every slice's product is those columns of the whole
// product bit for bit; where sgemm runs on the widened weight, within float rounding (BLAS picks its
// path by the slice's size).
TEST(StoredMatmul, WideActivationsOnRowSlicesAreColumnsOfTheWhole) {
  std::mt19937 rng(27);
  const int64_t m = 203, k = 256;
  std::vector<DType> types(std::begin(kAllStoredTypes), std::end(kAllStoredTypes));
  types.push_back(DType::kF32);
  for (DType type : types) {
    const Case c = random_case(type, m, k, rng);
    const cpu::DotKernel* kernel = cpu::wide_activation_kernel(type, cpu::best_isa());
    for (int64_t n : {int64_t{1}, int64_t{4}, int64_t{16}, cpu::kRowTileMaxRows, cpu::kRowTileMaxRows + 7}) {
      const bool row_dots = kernel != nullptr && n <= cpu::row_dot_max_rows(*kernel);
      const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
      std::vector<float> whole(static_cast<size_t>(n * m));
      cpu::matmul_wide_activations(x.data(), n, c.w, whole.data());
      const auto mag = magnitudes(x, n, c, m, k);
      for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 68}, {68, 68}, {136, 67}, {5, 1}}) {
        std::vector<float> part(static_cast<size_t>(n * count), -1.f);
        cpu::matmul_wide_activations(x.data(), n, weight_rows(c.w, first, count), part.data());
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < count; ++j) {
            const float got = part[i * count + j], want = whole[i * m + first + j];
            const auto where = [&] {
              return std::string(dtype_name(type)) + " n=" + std::to_string(n) + " rows [" + std::to_string(first) + ", " +
                     std::to_string(first + count) + ") [" + std::to_string(i) + "," + std::to_string(j) + "]";
            };
            if (row_dots) {
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << where();
            } else {
              ASSERT_NEAR(got, want, 1e-6 * mag[i * m + first + j] + 1e-7) << where();
            }
          }
        }
      }
    }
  }
}

// The output projection on panels packed once (a tied Q8_0 embedding, prelay_weight): up to the
// row tiles' limit each output equals the scalar Q8_0 × Q16 row dot (the same codes; the float sums
// re-associated), past it the stored weight's widened path bit for bit.
TEST(StoredMatmul, PrelaidWideActivationsEqualTheScalarQ16RowDot) {
  std::mt19937 rng(39);
  const int64_t m = 70, k = 512;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  const WeightTensor stored = c.w;
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  const cpu::DotKernel* scalar = cpu::find_q16_dot_kernel(DType::kQ8_0, cpu::Isa::kScalar);
  ASSERT_NE(scalar, nullptr);
  ASSERT_EQ(scalar->activation_type, cpu::ActivationType::kQ16);
  for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{6}, int64_t{7}, int64_t{16}, cpu::kRowTileMaxRows}) {
    const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
    std::vector<float> y(static_cast<size_t>(n * m), -1.f);
    cpu::matmul_wide_activations(x.data(), n, c.w, y.data());
    const auto mag = magnitudes(x, n, c, m, k);
    std::vector<std::byte> xq(cpu::activation_row_bytes(cpu::ActivationType::kQ16, k));
    for (int64_t i = 0; i < n; ++i) {
      cpu::quantize_activation_row(cpu::ActivationType::kQ16, x.data() + i * k, k, xq.data());
      for (int64_t j = 0; j < m; ++j) {
        const float want = scalar->dot(c.bytes.data() + j * c.w.row_bytes(), xq.data(), k);
        ASSERT_NEAR(y[i * m + j], want, (static_cast<double>(k) + 16) * std::ldexp(1.0, -23) * 1.1 * mag[i * m + j])
            << "n=" << n << " [" << i << "," << j << "]";
      }
    }
  }
  const int64_t n = cpu::kRowTileMaxRows + 1;
  const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
  std::vector<float> got(static_cast<size_t>(n * m)), want(got.size());
  cpu::matmul_wide_activations(x.data(), n, c.w, got.data());
  cpu::matmul_wide_activations(x.data(), n, stored, want.data());
  for (size_t e = 0; e < got.size(); ++e) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[e]), std::bit_cast<uint32_t>(want[e])) << "n=" << n << ", element " << e;
  }
}

// Batch invariance of the prelaid output projection (a decode step's logits): row i of n rows is row
// i alone, bit for bit, and a vocabulary slice from a panel edge (each rank's, weight_rows) is those
// columns of the whole.
TEST(StoredMatmul, PrelaidWideActivationRowsEqualTheirProductAlone) {
  std::mt19937 rng(41);
  const int64_t m = 150, k = 256, most = cpu::kRowTileMaxRows;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  if (!cpu::prelay_weight(c.w)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  const auto x = testing::random_tensor(static_cast<size_t>(most * k), rng);
  const auto alone =
      rows_alone(x, most, k, m, [&](const float* row, float* y) { cpu::matmul_wide_activations(row, 1, c.w, y); });
  for (int64_t n : {int64_t{2}, int64_t{7}, int64_t{16}, most}) {
    std::vector<float> y(static_cast<size_t>(n * m));
    cpu::matmul_wide_activations(x.data(), n, c.w, y.data());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i * m + j]), std::bit_cast<uint32_t>(alone[i][j]))
            << "n=" << n << " [" << i << "," << j << "]";
      }
    }
    for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, 80}, {80, 70}, {64, 16}}) {
      const WeightTensor slice = weight_rows(c.w, first, count);
      ASSERT_NE(slice.panels, nullptr);
      std::vector<float> part(static_cast<size_t>(n * count));
      cpu::matmul_wide_activations(x.data(), n, slice, part.data());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < count; ++j) {
          ASSERT_EQ(std::bit_cast<uint32_t>(part[i * count + j]), std::bit_cast<uint32_t>(y[i * m + first + j]))
              << "n=" << n << " rows [" << first << ", " << first + count << ") [" << i << "," << j << "]";
        }
      }
    }
  }
}

// The first largest entry of a row, NaN skipped, ties to the lower index (the sampler's greedy
// pick); -1 when every entry is NaN.
int64_t first_largest(const float* row, int64_t count) {
  int64_t best = -1;
  for (int64_t j = 0; j < count; ++j) {
    if (!std::isnan(row[j]) && (best < 0 || row[j] > row[best])) best = j;
  }
  return best;
}

// Greedy decoding's output projection (matmul_wide_activations_maxima) against the whole one: each
// row's first largest output is the same entry with the same bits, every other output either its
// bits or −inf, on a vocabulary slice too. The rows: random ones (most outputs skipped), one equal to
// a weight row that has an exact copy further on and a copy one code apart (ties and a near tie),
// all zeros (every output tied at 0), and one holding an infinity (taken whole).
TEST(StoredMatmul, PrelaidWideActivationMaximaKeepEachRowsFirstLargest) {
  std::mt19937 rng(43);
  const int64_t m = 1000, k = 256, row_bytes = k / 32 * 34;
  Case c = random_case(DType::kQ8_0, m, k, rng);
  std::copy_n(c.bytes.begin() + 5 * row_bytes, row_bytes, c.bytes.begin() + 700 * row_bytes);
  std::copy_n(c.bytes.begin() + 5 * row_bytes, row_bytes, c.bytes.begin() + 300 * row_bytes);
  auto& code = reinterpret_cast<int8_t&>(c.bytes[300 * row_bytes + 2]);
  code = static_cast<int8_t>(code - (code > 0) + (code < 0));  // a smaller magnitude: row 5 stays ahead
  quant::dequantize_rows(DType::kQ8_0, c.bytes.data(), m, k, c.w_hat.data());
  if (!cpu::prelay_weight(c.w, /*row_l1=*/true)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  const int64_t most = cpu::kRowTileMaxRows;
  auto x = testing::random_tensor(static_cast<size_t>(most * k), rng);
  std::copy_n(c.w_hat.begin() + 5 * k, k, x.begin() + 1 * k);
  std::fill_n(x.begin() + 2 * k, k, 0.f);
  x[3 * k + 17] = std::numeric_limits<float>::infinity();
  for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, m}, {512, 488}}) {
    const WeightTensor w = weight_rows(c.w, first, count);
    for (int64_t n : {int64_t{1}, int64_t{4}, int64_t{16}, most}) {
      std::vector<float> whole(static_cast<size_t>(n * count)), maxima(whole.size());
      cpu::matmul_wide_activations(x.data(), n, w, whole.data());
      cpu::matmul_wide_activations_maxima(x.data(), n, w, maxima.data());
      int64_t kept_random = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float* want = whole.data() + i * count;
        const float* got = maxima.data() + i * count;
        const int64_t at = first_largest(want, count);
        ASSERT_EQ(first_largest(got, count), at) << "rows [" << first << ", +" << count << ") n=" << n << " row " << i;
        for (int64_t j = 0; j < count; ++j) {
          const bool skipped = got[j] == -std::numeric_limits<float>::infinity() && want[j] != got[j];
          ASSERT_TRUE(skipped || std::bit_cast<uint32_t>(got[j]) == std::bit_cast<uint32_t>(want[j]))
              << "rows [" << first << ", +" << count << ") n=" << n << " [" << i << "," << j << "]: " << got[j]
              << " against " << want[j];
          if (i >= 4 && !skipped) ++kept_random;
        }
      }
      if (first == 0 && n >= 2) EXPECT_EQ(first_largest(maxima.data() + count, count), 5) << "the tie goes to the lower row";
      // The point of it: most of a random row's outputs need no Q16 pass.
      if (n > 4) EXPECT_LT(kept_random, (n - 4) * count / 4) << "n=" << n;
    }
  }
}

// Where the two roundings disagree on the largest output, the maxima follow Q16. Two unit-scale
// weight rows in different panels, 1.0 at element 1 (row 0) and 114/127 at element 2 (row 16),
// against x = (127, 0.49, 0.51, 0, ...): Q8_0 rounds x's block by 1 (0.49 -> 0, 0.51 -> 1), so
// row 16 leads there; Q16 keeps 0.49 and 0.51, so row 0 leads (0.49 against 0.458). A bound of
// half the size would leave row 0's panel out.
TEST(StoredMatmul, PrelaidWideActivationMaximaFollowQ16WhereQ8Disagrees) {
  const int64_t m = 32, k = 32;
  std::vector<quant::BlockQ8_0> blocks(static_cast<size_t>(m));
  for (quant::BlockQ8_0& b : blocks) {
    b.d = f32_to_f16(1.f / 127);
    std::fill(std::begin(b.qs), std::end(b.qs), int8_t{0});
  }
  blocks[0].qs[1] = 127;
  blocks[16].qs[2] = 114;
  WeightTensor w;
  w.dtype = DType::kQ8_0;
  w.shape = {m, k};
  w.data = reinterpret_cast<const std::byte*>(blocks.data());
  if (!cpu::prelay_weight(w, /*row_l1=*/true)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  std::vector<float> x(static_cast<size_t>(k), 0.f);
  x[0] = 127.f;
  x[1] = 0.49f;
  x[2] = 0.51f;
  std::vector<float> q8(static_cast<size_t>(m)), whole(q8.size()), maxima(q8.size());
  cpu::matmul(x.data(), 1, w, q8.data());
  ASSERT_EQ(first_largest(q8.data(), m), 16) << "the Q8_0 rounding must lead with row 16 for this to test anything";
  cpu::matmul_wide_activations(x.data(), 1, w, whole.data());
  ASSERT_EQ(first_largest(whole.data(), m), 0);
  cpu::matmul_wide_activations_maxima(x.data(), 1, w, maxima.data());
  EXPECT_EQ(first_largest(maxima.data(), m), 0);
  EXPECT_EQ(std::bit_cast<uint32_t>(maxima[0]), std::bit_cast<uint32_t>(whole[0]));
}

// Q, K and V in one call: each output is the very matmul of its weight (same kernel, same
// activation rounding, same per-element sums), whether the weights share a type or not.
TEST(StoredMatmul, SharedInputEqualsOneMatmulPerWeight) {
  std::mt19937 rng(26);
  const int64_t k = 256;
  const std::vector<std::vector<DType>> type_sets = {
      {DType::kQ4_1, DType::kQ4_1, DType::kQ4_1}, {DType::kQ8_0, DType::kQ8_0},
      {DType::kQ4_0, DType::kQ6_K, DType::kQ4_0}, {DType::kQ4_K, DType::kQ4_K},
      {DType::kBF16, DType::kBF16, DType::kBF16}};
  for (size_t set = 0; set <= type_sets.size(); ++set) {
    // The last set: the Q8_0 pair with panels packed once (on AVX-512 VNNI), one call for both.
    const bool prelaid = set == type_sets.size();
    const auto& types = type_sets[prelaid ? 1 : set];
    std::vector<Case> cases;
    for (size_t t = 0; t < types.size(); ++t) {
      cases.push_back(random_case(types[t], 40 + 24 * static_cast<int64_t>(t), k, rng));
      if (prelaid) cpu::prelay_weight(cases.back().w);
    }
    for (int64_t n : {int64_t{1}, int64_t{3}, cpu::kRowDotMaxRows, cpu::kRowDotMaxRows + 1, cpu::kRowTileMaxRows,
                      cpu::kRowTileMaxRows + 1}) {
      const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
      std::vector<std::vector<float>> got(cases.size()), want(cases.size());
      for (size_t t = 0; t < cases.size(); ++t) {
        got[t].assign(static_cast<size_t>(n * cases[t].w.rows()), -1.f);
        want[t].resize(got[t].size());
        cpu::matmul(x.data(), n, cases[t].w, want[t].data());
      }
      if (cases.size() == 2) {
        cpu::matmul_shared_input(x.data(), n, {{&cases[0].w, got[0].data()}, {&cases[1].w, got[1].data()}});
      } else {
        cpu::matmul_shared_input(x.data(), n, {{&cases[0].w, got[0].data()}, {&cases[1].w, got[1].data()},
                                               {&cases[2].w, got[2].data()}});
      }
      for (size_t t = 0; t < cases.size(); ++t) {
        EXPECT_EQ(got[t], want[t]) << dtype_name(types[t]) << " output " << t << " n=" << n;
      }
    }
  }
}

TEST(StoredMatmul, WidenedRowsAreDequantizeRowsBitForBit) {
  std::mt19937 rng(24);
  const int64_t m = 9, k = 512;
  for (DType type : kAllStoredTypes) {
    const Case c = random_case(type, m, k, rng);
    std::vector<float> rows(static_cast<size_t>(3 * k));
    cpu::dequantize_weight_rows(c.w, 5, 3, rows.data());
    for (size_t e = 0; e < rows.size(); ++e) {
      ASSERT_EQ(std::bit_cast<uint32_t>(rows[e]), std::bit_cast<uint32_t>(c.w_hat[5 * k + e])) << dtype_name(type) << " " << e;
    }
  }
}

TEST(StoredMatmul, F32WeightsAreTheBlasProduct) {
  std::mt19937 rng(23);
  const int64_t n = 3, m = 17, k = 40;
  const auto w = testing::random_tensor(static_cast<size_t>(m * k), rng);
  const auto x = testing::random_tensor(static_cast<size_t>(n * k), rng);
  WeightTensor t;
  t.shape = {m, k};
  t.data = reinterpret_cast<const std::byte*>(w.data());
  std::vector<float> y(static_cast<size_t>(n * m)), want(y.size());
  cpu::matmul(x.data(), n, t, y.data());
  cpu::matmul_nt(x.data(), n, k, w.data(), m, want.data());
  EXPECT_EQ(y, want);
}

}  // namespace
}  // namespace star
