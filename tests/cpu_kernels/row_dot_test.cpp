// The row-dot kernels (star/backend/cpu/dot_kernels.h): each vector kernel equals the scalar one up
// to float re-association, and the scalar one equals the float64 dot of the dequantized weights
// with the unrounded activations within the bound the activation rounding implies.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/random_weights.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/quant/dequantize.h"
#include "star/quant/blocks.h"

namespace star {
namespace {

const DType kRowDotTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                              DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF16,  DType::kBF16};

// The kernel tables with their own activation rounding (find_dot_kernel's and
// find_q16_dot_kernel's), and all three with the float32-activation one.
using KernelFinder = const cpu::DotKernel* (*)(DType, cpu::Isa);
const KernelFinder kRoundingFinders[] = {cpu::find_dot_kernel, cpu::find_q16_dot_kernel};
const KernelFinder kAllFinders[] = {cpu::find_dot_kernel, cpu::find_q16_dot_kernel, cpu::find_float_dot_kernel};

std::vector<int64_t> row_lengths(DType type) {
  if (dtype_block_elements(type) == quant::kSuperBlock) return {256, 512, 2048, 4352};
  if (dtype_is_quantized(type)) return {32, 64, 96, 2048, 4128};
  return {1, 15, 40, 100, 2048, 4099};
}

struct Row {
  std::vector<std::byte> weight, activation;
  std::vector<float> w_hat, x, x_hat;  // dequantized weight, activation, activation as rounded
  std::vector<float> offsets;          // per 32-element block: Q4_1's / Q5_1's m, Q4_K's / Q5_K's −dmin·min, else 0
};

// The offset of each 32-element block of an offset type: the m that follows d at the start of
// Q4_1 and Q5_1 blocks; for Q4_K and Q5_K, whose codes all lie past the 16 bytes of d, dmin and
// scales, the value of code 0 (0·scale − dmin·min) in the block with those code bytes zeroed.
std::vector<float> block_offsets(DType type, const std::vector<std::byte>& weight, int64_t k) {
  // One per started block: float rows (F16, BF16) need not fill their last one.
  std::vector<float> m(static_cast<size_t>((k + quant::kLegacyBlock - 1) / quant::kLegacyBlock), 0.f);
  if (type == DType::kQ4_1 || type == DType::kQ5_1) {
    for (size_t b = 0; b < m.size(); ++b) {
      uint16_t bits;
      std::memcpy(&bits, weight.data() + b * dtype_block_bytes(type) + 2, 2);
      m[b] = f16_to_f32(bits);
    }
  } else if (type == DType::kQ4_K || type == DType::kQ5_K) {
    std::vector<std::byte> zeroed = weight;
    for (size_t at = 0; at < zeroed.size(); at += dtype_block_bytes(type)) {
      std::fill(zeroed.begin() + static_cast<std::ptrdiff_t>(at + 16),
                zeroed.begin() + static_cast<std::ptrdiff_t>(at + dtype_block_bytes(type)), std::byte{0});
    }
    std::vector<float> values(static_cast<size_t>(k));
    quant::dequantize_rows(type, zeroed.data(), 1, k, values.data());
    for (size_t b = 0; b < m.size(); ++b) m[b] = values[b * quant::kLegacyBlock];
  }
  return m;
}

Row random_row(DType type, const cpu::DotKernel& kernel, int64_t k, std::mt19937& rng) {
  Row r;
  r.weight = testing::random_weight_rows(type, 1, k, rng);
  r.w_hat.resize(static_cast<size_t>(k));
  quant::dequantize_rows(type, r.weight.data(), 1, k, r.w_hat.data());
  r.offsets = block_offsets(type, r.weight, k);
  r.x = testing::random_tensor(static_cast<size_t>(k), rng);
  r.activation.resize(cpu::activation_row_bytes(kernel.activation_type, k));
  cpu::quantize_activation_row(kernel.activation_type, r.x.data(), k, r.activation.data());
  r.x_hat.resize(static_cast<size_t>(k));
  cpu::dequantize_activation_row(kernel.activation_type, r.activation.data(), k, r.x_hat.data());
  return r;
}

// Σ (|ŵ_j| + 2|m_j|)·|x̂_j|: what float rounding of the kernels' sums scales with. An offset type
// sums d·q·x̂ and m·x̂ apart, each below (|ŵ| + |m|)·|x̂| (since d·q = ŵ − m), whatever cancels.
double magnitude(const Row& r) {
  double m = 0;
  for (size_t j = 0; j < r.x.size(); ++j) {
    const double offset = r.offsets.empty() ? 0.0 : std::fabs(r.offsets[j / quant::kLegacyBlock]);
    m += (std::fabs(static_cast<double>(r.w_hat[j])) + 2 * offset) * std::fabs(r.x_hat[j]);
  }
  return m;
}

// Float additions in a kernel's sum: one per 32-element activation block (the integer block sums
// are exact; two with an offset) or one per element, plus a few for the scale products and the
// final horizontal sum. Each can be off by 2^-24 of the running magnitude.
double float_rounding(DType type, int64_t k, const Row& r) {
  const double terms = static_cast<double>(dtype_is_quantized(type) ? 2 * k / quant::kLegacyBlock : k) + 8;
  return terms * std::ldexp(1.0, -24) * magnitude(r);
}

// |Σ_j ŵ_j (x_j − x̂_j)|, bounded by what the activation rounding can move:
//   Q8_0: a block's q_j = round(x_j / d) with d = max|x|/127, stored as d16 = f16(d), so
//         |x_j − d16·q_j| <= |x_j − d·q_j| + |q_j|·|d − d16| <= d/2 + 127·2^-11·d; the block moves
//         the dot by at most that times Σ_{j in block} |ŵ_j|.
//   BF16: round to nearest with 8 significant bits: |x_j − x̂_j| <= 2^-8 |x_j|.
//   Q8_1: as Q8_0 for x̂; the offset's product m·s replaces m·Σx̂ = m·d16·Σq, and s = f16(d·Σq)
//         (d·Σq itself a float product) misses d16·Σq by at most
//         |f16(v) − v| + |Σq|·|d − d16| <= (2^-11 + 2^-24)·d·|Σq| + 2^-25 + |Σq|·(2^-11·d + 2^-25)
//         (half an f16 step: 2^-11 relative, 2^-25 absolute among the subnormals).
//   Q16: q_j = round(x_j·(1/d)) with d = max|x|/32767 in float32; the float reciprocal and product
//         move x_j·(1/d) by at most 2^-23·32767 < 0.01 from x_j/d, so |x_j − d·q_j| <= 0.51·d. The
//         offset's product m·s replaces m·Σx̂ = m·d·Σq, and s = d·Σq is one float rounding of it.
//   F32 (F16 weights): no rounding.
double activation_bound(cpu::ActivationType activation_type, const Row& r) {
  double bound = 0;
  if (activation_type == cpu::ActivationType::kQ16) {
    for (size_t b = 0; b < r.x.size(); b += quant::kLegacyBlock) {
      double amax = 0, w_abs = 0, x_hat_sum = 0;
      for (size_t j = b; j < b + quant::kLegacyBlock; ++j) {
        amax = std::max(amax, std::fabs(static_cast<double>(r.x[j])));
        w_abs += std::fabs(static_cast<double>(r.w_hat[j]));
        x_hat_sum += r.x_hat[j];
      }
      bound += 0.51 * (amax / 32767) * w_abs +
               std::fabs(r.offsets[b / quant::kLegacyBlock]) * std::ldexp(1.0, -23) * std::fabs(x_hat_sum);
    }
    return bound;
  }
  if (activation_type == cpu::ActivationType::kQ8_1) {
    for (size_t b = 0; b < r.x.size(); b += quant::kLegacyBlock) {
      double amax = 0, sum_q = 0;
      for (size_t j = b; j < b + quant::kLegacyBlock; ++j) {
        amax = std::max(amax, std::fabs(static_cast<double>(r.x[j])));
      }
      const double d = amax / 127;
      quant::BlockQ8_1 block;
      std::memcpy(&block, r.activation.data() + b / quant::kLegacyBlock * sizeof block, sizeof block);
      for (int8_t q : block.qs) sum_q += q;
      const double s_error = (std::ldexp(1.0, -10) + std::ldexp(1.0, -24)) * d * std::fabs(sum_q) +
                             std::ldexp(1.0, -25) * (1 + std::fabs(sum_q));
      bound += std::fabs(r.offsets[b / quant::kLegacyBlock]) * s_error;
    }
  }
  if (activation_type == cpu::ActivationType::kQ8_0 || activation_type == cpu::ActivationType::kQ8_1) {
    for (size_t b = 0; b < r.x.size(); b += quant::kLegacyBlock) {
      double amax = 0, w_abs = 0;
      for (size_t j = b; j < b + quant::kLegacyBlock; ++j) {
        amax = std::max(amax, std::fabs(static_cast<double>(r.x[j])));
        w_abs += std::fabs(static_cast<double>(r.w_hat[j]));
      }
      bound += (0.5 + 127 * std::ldexp(1.0, -11)) * (amax / 127) * w_abs;
    }
  } else if (activation_type == cpu::ActivationType::kBF16) {
    for (size_t j = 0; j < r.x.size(); ++j) bound += std::ldexp(1.0, -8) * std::fabs(static_cast<double>(r.w_hat[j]) * r.x[j]);
  }
  return bound;
}

TEST(RowDot, VectorKernelsEqualScalarUpToReassociation) {
  std::mt19937 rng(11);
  int checked = 0;
  for (KernelFinder find : kRoundingFinders)
  for (DType type : kRowDotTypes) {
    const cpu::DotKernel* scalar = find(type, cpu::Isa::kScalar);
    if (find != cpu::find_dot_kernel && scalar == nullptr) continue;  // not a type of this table
    ASSERT_NE(scalar, nullptr) << dtype_name(type);
    for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      const cpu::DotKernel* fast = find(type, isa);
      if (fast == nullptr) continue;  // this CPU lacks the instruction set
      ASSERT_EQ(fast->activation_type, scalar->activation_type);
      for (int64_t k : row_lengths(type)) {
        for (int trial = 0; trial < 8; ++trial) {
          const Row r = random_row(type, *scalar, k, rng);
          const float want = scalar->dot(r.weight.data(), r.activation.data(), k);
          const float got = fast->dot(r.weight.data(), r.activation.data(), k);
          ASSERT_LE(std::fabs(static_cast<double>(got) - want), 2 * float_rounding(type, k, r))
              << dtype_name(type) << " " << cpu::isa_name(isa) << " k=" << k;
          ++checked;
        }
      }
    }
  }
  if (cpu::best_isa() != cpu::Isa::kScalar) EXPECT_GT(checked, 0);
}

TEST(RowDot, ScalarKernelWithinActivationRoundingOfFloat64Dot) {
  std::mt19937 rng(12);
  for (KernelFinder find : kRoundingFinders)
  for (DType type : kRowDotTypes) {
    const cpu::DotKernel* scalar = find(type, cpu::Isa::kScalar);
    if (find != cpu::find_dot_kernel && scalar == nullptr) continue;  // not a type of this table
    ASSERT_NE(scalar, nullptr);
    for (int64_t k : row_lengths(type)) {
      for (int trial = 0; trial < 8; ++trial) {
        const Row r = random_row(type, *scalar, k, rng);
        double exact = 0;
        for (size_t j = 0; j < r.x.size(); ++j) exact += static_cast<double>(r.w_hat[j]) * r.x[j];
        const float got = scalar->dot(r.weight.data(), r.activation.data(), k);
        const double bound = activation_bound(scalar->activation_type, r) + float_rounding(type, k, r);
        ASSERT_LE(std::fabs(got - exact), bound) << dtype_name(type) << " k=" << k << " trial " << trial;
      }
    }
  }
}

TEST(RowDot, Q8_0ActivationsAreGgmlsRounding) {
  // d = max|x| / 127 = 1/127 here; q = round(x / d), halves away from zero as roundf does.
  std::vector<float> x(32, 0.f);
  x[0] = 1.f;
  x[1] = -0.5f / 127;   // exactly half a step: rounds away from zero to -1
  x[2] = 63.5f / 127;   // 63.5 steps (not exact in float; within a step of 64)
  x[3] = -1.f;
  std::vector<std::byte> row(cpu::activation_row_bytes(cpu::ActivationType::kQ8_0, 32));
  cpu::quantize_activation_row(cpu::ActivationType::kQ8_0, x.data(), 32, row.data());
  quant::BlockQ8_0 block;
  std::memcpy(&block, row.data(), sizeof block);
  EXPECT_EQ(block.d, f32_to_f16(1.f / 127));
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], -1);
  EXPECT_NEAR(block.qs[2], 64, 1);
  EXPECT_EQ(block.qs[3], -127);
  EXPECT_EQ(block.qs[4], 0);
}

// The writers' quantize_rows is ggml's quantize_row_q8_0_ref byte for byte: a peer to hold the
// activation rounding to, on random blocks and on blocks of exact half steps (k + 0.5 times d).
TEST(RowDot, Q8_0ActivationsEqualTheWritersQuantizer) {
  std::mt19937 rng(15);
  const int64_t k = 4096;
  auto x = testing::random_tensor(static_cast<size_t>(k), rng);
  for (int64_t j = 0; j < 1024; ++j) {
    const float d = 1.f / 128;  // a power of two: x / d is exact
    x[j] = j % 32 == 0 ? 127 * d : (static_cast<float>(j % 254) - 127.f + 0.5f) * d;  // |x| < 127·d
    if (j % 64 >= 32) x[j] = -x[j];
  }
  std::vector<std::byte> got(cpu::activation_row_bytes(cpu::ActivationType::kQ8_0, k));
  cpu::quantize_activation_row(cpu::ActivationType::kQ8_0, x.data(), k, got.data());
  EXPECT_EQ(got, quant::quantize_rows(DType::kQ8_0, x.data(), 1, k));
}

// Q16: d = max|x| / 32767 (a power of two here, so x / d is exact), q rounds halves away from zero,
// and the planes hold q = 256·hi + lo with lo unsigned; s = d·Σq.
TEST(RowDot, Q16ActivationsRoundHalvesAwayIntoTwoPlanes) {
  const float d = std::ldexp(1.f, -15);
  std::vector<float> x(32, 0.f);
  x[0] = 32767 * d;  // max|x|: q = 32767
  x[1] = -0.5f * d;  // half a step: -1
  x[2] = 1.5f * d;   // 2
  x[3] = -32767 * d;
  x[4] = 300.25f * d;  // 300
  std::vector<std::byte> row(cpu::activation_row_bytes(cpu::ActivationType::kQ16, 32));
  ASSERT_EQ(row.size(), 72u);
  cpu::quantize_activation_row(cpu::ActivationType::kQ16, x.data(), 32, row.data());
  std::vector<float> x_hat(32);
  cpu::dequantize_activation_row(cpu::ActivationType::kQ16, row.data(), 32, x_hat.data());
  const int want[] = {32767, -1, 2, -32767, 300};
  for (int j = 0; j < 5; ++j) EXPECT_EQ(x_hat[j], static_cast<float>(want[j]) * d) << j;
  for (int j = 5; j < 32; ++j) EXPECT_EQ(x_hat[j], 0.f) << j;
  float stored_d, s;
  std::memcpy(&stored_d, row.data(), 4);
  std::memcpy(&s, row.data() + 4, 4);
  EXPECT_EQ(stored_d, d);
  EXPECT_EQ(s, d * static_cast<float>(32767 - 1 + 2 - 32767 + 300));
  // q = -1: lo 255, hi -1; q = -32767: lo 1, hi -128 (lo at bytes 8-39, hi at 40-71).
  EXPECT_EQ(static_cast<uint8_t>(row[8 + 1]), 255);
  EXPECT_EQ(static_cast<int8_t>(row[40 + 1]), -1);
  EXPECT_EQ(static_cast<uint8_t>(row[8 + 3]), 1);
  EXPECT_EQ(static_cast<int8_t>(row[40 + 3]), -128);
}

TEST(RowDot, Q8_1ActivationsAreQ8_0PlusTheScaledSum) {
  std::mt19937 rng(13);
  const int64_t k = 96;
  auto x = testing::random_tensor(static_cast<size_t>(k), rng);
  std::fill(x.begin() + 64, x.end(), 0.f);  // an all-zero block: d = 0, q = 0, s = 0
  std::vector<std::byte> q8_0(cpu::activation_row_bytes(cpu::ActivationType::kQ8_0, k));
  std::vector<std::byte> q8_1(cpu::activation_row_bytes(cpu::ActivationType::kQ8_1, k));
  ASSERT_EQ(q8_1.size(), 3 * sizeof(quant::BlockQ8_1));
  cpu::quantize_activation_row(cpu::ActivationType::kQ8_0, x.data(), k, q8_0.data());
  cpu::quantize_activation_row(cpu::ActivationType::kQ8_1, x.data(), k, q8_1.data());
  for (int64_t b = 0; b < 3; ++b) {
    quant::BlockQ8_0 want;
    quant::BlockQ8_1 got;
    std::memcpy(&want, q8_0.data() + b * sizeof want, sizeof want);
    std::memcpy(&got, q8_1.data() + b * sizeof got, sizeof got);
    EXPECT_EQ(got.d, want.d) << b;
    int32_t sum = 0;
    for (int64_t j = 0; j < 32; ++j) {
      EXPECT_EQ(got.qs[j], want.qs[j]) << b << " " << j;
      sum += got.qs[j];
    }
    float amax = 0.f;
    for (int64_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    EXPECT_EQ(got.s, f32_to_f16(static_cast<float>(sum) * (amax / 127.f))) << b;
  }
  std::vector<float> x_hat(static_cast<size_t>(k));
  cpu::dequantize_activation_row(cpu::ActivationType::kQ8_1, q8_1.data(), k, x_hat.data());
  std::vector<float> want_hat(static_cast<size_t>(k));
  quant::dequantize_rows(DType::kQ8_0, q8_0.data(), 1, k, want_hat.data());
  EXPECT_EQ(x_hat, want_hat);
}

// Kernels with float32 activations round only their float arithmetic: per element the widened
// weight (d·q + m) and the product, k sums and k/32 block scalings in the scalar kernel, another k
// re-associated in a vector one.
TEST(RowDot, FloatActivationKernelsEqualTheFloat64DotUpToFloatRounding) {
  std::mt19937 rng(14);
  int vector_checked = 0;
  for (DType type : {DType::kQ4_1, DType::kQ8_0, DType::kQ6_K, DType::kF16, DType::kBF16}) {
    const cpu::DotKernel* scalar = cpu::find_float_dot_kernel(type, cpu::Isa::kScalar);
    ASSERT_NE(scalar, nullptr) << dtype_name(type);
    ASSERT_EQ(scalar->activation_type, cpu::ActivationType::kF32);
    for (int64_t k : row_lengths(type)) {
      for (int trial = 0; trial < 8; ++trial) {
        const Row r = random_row(type, *scalar, k, rng);
        ASSERT_EQ(r.x_hat, r.x);
        double exact = 0;
        for (size_t j = 0; j < r.x.size(); ++j) exact += static_cast<double>(r.w_hat[j]) * r.x[j];
        const double rounding = (static_cast<double>(k) + k / 32 + 8) * std::ldexp(1.0, -24) * magnitude(r);
        const float want = scalar->dot(r.weight.data(), r.activation.data(), k);
        ASSERT_LE(std::fabs(want - exact), rounding) << dtype_name(type) << " k=" << k;
        for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
          const cpu::DotKernel* fast = cpu::find_float_dot_kernel(type, isa);
          if (fast == nullptr) continue;  // this CPU lacks the instruction set
          const float got = fast->dot(r.weight.data(), r.activation.data(), k);
          ASSERT_LE(std::fabs(static_cast<double>(got) - want), 2 * rounding)
              << dtype_name(type) << " " << cpu::isa_name(isa) << " k=" << k;
          ++vector_checked;
        }
      }
    }
  }
  if (cpu::best_isa() != cpu::Isa::kScalar) EXPECT_GT(vector_checked, 0);
  EXPECT_EQ(cpu::find_float_dot_kernel(DType::kQ4_0, cpu::Isa::kScalar), nullptr);
}

// The register tiles (DotKernel::tile): every output is its kernel's one-row dot bit for bit, for
// every activation row count 1..40, several weight row counts and offsets (so a row lands at every
// position of a tile and in the edge tiles), with and without accumulate; and, through the dot,
// within float rounding of the scalar kernel.
TEST(RowDot, TilesEqualTheOneRowDotBitForBit) {
  std::mt19937 rng(16);
  int tiles_checked = 0;
  for (DType type : kRowDotTypes) {
    for (KernelFinder find : kAllFinders) {
      const cpu::DotKernel* scalar = find(type, cpu::Isa::kScalar);
      for (cpu::Isa isa : {cpu::Isa::kScalar, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
        const cpu::DotKernel* kernel = find(type, isa);
        if (kernel == nullptr || kernel->tile == nullptr) continue;
        const bool super_blocks = dtype_block_elements(type) == quant::kSuperBlock;
        for (int64_t k : super_blocks ? std::vector<int64_t>{256, 512, 768} : std::vector<int64_t>{32, 64, 96, 800}) {
          const int64_t m = 11, n_max = 40;
          std::vector<Row> rows;  // weight row r from rows[r], activation row i from rows[i]
          for (int64_t r = 0; r < n_max; ++r) rows.push_back(random_row(type, *kernel, k, rng));
          const size_t w_row_bytes = rows[0].weight.size(), x_row_bytes = rows[0].activation.size();
          std::vector<std::byte> w, x;
          for (int64_t r = 0; r < m; ++r) w.insert(w.end(), rows[r].weight.begin(), rows[r].weight.end());
          for (const Row& row : rows) x.insert(x.end(), row.activation.begin(), row.activation.end());
          std::vector<float> dots(static_cast<size_t>(n_max * m));
          for (int64_t i = 0; i < n_max; ++i) {
            for (int64_t r = 0; r < m; ++r) {
              const auto* wr = w.data() + r * w_row_bytes;
              const auto* xr = x.data() + i * x_row_bytes;
              dots[i * m + r] = kernel->dot(wr, xr, k);
              // The scalar reference, on the magnitudes of this row pair (an offset type's two sums
              // each, as magnitude() counts them).
              double mag = 0;
              for (int64_t j = 0; j < k; ++j) {
                const double offset = std::fabs(rows[r].offsets[static_cast<size_t>(j / quant::kLegacyBlock)]);
                mag += (std::fabs(static_cast<double>(rows[r].w_hat[j])) + 2 * offset) * std::fabs(rows[i].x_hat[j]);
              }
              const double bound = (2.0 * k + 8) * std::ldexp(1.0, -24) * mag;
              ASSERT_LE(std::fabs(static_cast<double>(dots[i * m + r]) - scalar->dot(wr, xr, k)), 2 * bound)
                  << dtype_name(type) << " " << cpu::isa_name(isa) << " k=" << k;
            }
          }
          for (int64_t n = 1; n <= n_max; ++n) {
            for (int64_t first = 0; first < 4; ++first) {
              const int64_t rows_here = m - first - (n % 3);
              for (bool accumulate : {false, true}) {
                const int64_t ldy = rows_here + 2;
                std::vector<float> y(static_cast<size_t>(n * ldy));
                for (float& v : y) v = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
                const std::vector<float> y0 = y;
                kernel->tile(w.data() + first * w_row_bytes, w_row_bytes, rows_here, x.data(), x_row_bytes, n, k,
                             y.data(), ldy, accumulate);
                for (int64_t i = 0; i < n; ++i) {
                  for (int64_t r = 0; r < ldy; ++r) {
                    const size_t at = static_cast<size_t>(i * ldy + r);
                    // Outside the m × n outputs nothing is written.
                    const float want = r >= rows_here   ? y0[at]
                                       : accumulate      ? y0[at] + dots[i * m + first + r]
                                                         : dots[i * m + first + r];
                    ASSERT_EQ(std::bit_cast<uint32_t>(y[at]), std::bit_cast<uint32_t>(want))
                        << dtype_name(type) << " " << cpu::isa_name(isa) << cpu::activation_type_name(kernel->activation_type)
                        << " k=" << k << " n=" << n << " first=" << first << " [" << i << "," << r << "]";
                  }
                }
                ++tiles_checked;
              }
            }
          }
        }
      }
    }
  }
  if (cpu::best_isa() != cpu::Isa::kScalar) EXPECT_GT(tiles_checked, 0);
}

TEST(RowDot, OnlyTheListedTypesHaveKernels) {
  for (DType type : {DType::kF32}) {
    EXPECT_EQ(cpu::find_dot_kernel(type, cpu::Isa::kScalar), nullptr) << dtype_name(type);
  }
}

}  // namespace
}  // namespace star
