// The row-dot kernels (star/backend/cpu/dot_kernels.h): each vector kernel equals the scalar one up
// to float re-association, and the scalar one equals the float64 dot of the dequantized weights
// with the unrounded activations within the bound the activation rounding implies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cpu_kernels/random_weights.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/quant/dequantize.h"
#include "star/quant/blocks.h"

namespace star {
namespace {

const DType kRowDotTypes[] = {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF16, DType::kBF16};

// Q4_K and Q5_K weights are d·scale·q − dmin·min: the kernels sum the two parts separately.
bool has_mins(DType type) { return type == DType::kQ4_K || type == DType::kQ5_K; }

std::vector<int64_t> row_lengths(DType type) {
  if (dtype_block_elements(type) == quant::kSuperBlock) return {256, 512, 2048, 4352};
  if (dtype_is_quantized(type)) return {32, 64, 96, 2048, 4128};
  return {1, 15, 40, 100, 2048, 4099};
}

struct Row {
  std::vector<std::byte> weight, activation;
  std::vector<float> w_hat, x, x_hat;  // dequantized weight, activation, activation as rounded
  std::vector<float> offset;           // −dmin·min of each weight (Q4_K, Q5_K), else 0
};

// Every code of a Q4_K / Q5_K block lies past its 16 bytes of d, dmin and scales: the block with
// those bytes zeroed dequantizes to its offsets 0·scale − dmin·min.
std::vector<float> offsets(DType type, std::vector<std::byte> weight, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k), 0.f);
  if (!has_mins(type)) return out;
  for (size_t at = 0; at < weight.size(); at += dtype_block_bytes(type)) {
    std::fill(weight.begin() + static_cast<std::ptrdiff_t>(at + 16),
              weight.begin() + static_cast<std::ptrdiff_t>(at + dtype_block_bytes(type)), std::byte{0});
  }
  quant::dequantize_rows(type, weight.data(), 1, k, out.data());
  return out;
}

Row random_row(DType type, const cpu::DotKernel& kernel, int64_t k, std::mt19937& rng) {
  Row r;
  r.weight = testing::random_weight_rows(type, 1, k, rng);
  r.w_hat.resize(static_cast<size_t>(k));
  quant::dequantize_rows(type, r.weight.data(), 1, k, r.w_hat.data());
  r.x = testing::random_tensor(static_cast<size_t>(k), rng);
  r.activation.resize(cpu::activation_row_bytes(kernel.activation_type, k));
  cpu::quantize_activation_row(kernel.activation_type, r.x.data(), k, r.activation.data());
  r.x_hat.resize(static_cast<size_t>(k));
  quant::dequantize_rows(kernel.activation_type, r.activation.data(), 1, k, r.x_hat.data());
  r.offset = offsets(type, r.weight, k);
  return r;
}

// Σ(|ŵ_j − o_j| + |o_j|)·|x̂_j| (o the offsets; Σ|ŵ_j x̂_j| where there are none): what float
// rounding of the kernels' sums scales with.
double magnitude(const Row& r) {
  double m = 0;
  for (size_t j = 0; j < r.x.size(); ++j) {
    const double o = r.offset[j];
    m += (std::fabs(r.w_hat[j] - o) + std::fabs(o)) * std::fabs(static_cast<double>(r.x_hat[j]));
  }
  return m;
}

// Float additions in a kernel's sum: one per 32-element activation block (the integer block sums
// are exact; two with the mins) or one per element, plus a few for the scale products and the
// final horizontal sum. Each can be off by 2^-24 of the running magnitude.
double float_rounding(DType type, int64_t k, const Row& r) {
  const double blocks = static_cast<double>(k / quant::kLegacyBlock) * (has_mins(type) ? 2 : 1);
  const double terms = (dtype_is_quantized(type) ? blocks : static_cast<double>(k)) + 8;
  return terms * std::ldexp(1.0, -24) * magnitude(r);
}

// |Σ_j ŵ_j (x_j − x̂_j)|, bounded by what the activation rounding can move:
//   Q8_0: a block's q_j = round(x_j / d) with d = max|x|/127, stored as d16 = f16(d), so
//         |x_j − d16·q_j| <= |x_j − d·q_j| + |q_j|·|d − d16| <= d/2 + 127·2^-11·d; the block moves
//         the dot by at most that times Σ_{j in block} |ŵ_j|.
//   BF16: round to nearest with 8 significant bits: |x_j − x̂_j| <= 2^-8 |x_j|.
//   F32 (F16 weights): no rounding.
double activation_bound(DType activation_type, const Row& r) {
  double bound = 0;
  if (activation_type == DType::kQ8_0) {
    for (size_t b = 0; b < r.x.size(); b += quant::kLegacyBlock) {
      double amax = 0, w_abs = 0;
      for (size_t j = b; j < b + quant::kLegacyBlock; ++j) {
        amax = std::max(amax, std::fabs(static_cast<double>(r.x[j])));
        w_abs += std::fabs(static_cast<double>(r.w_hat[j]));
      }
      bound += (0.5 + 127 * std::ldexp(1.0, -11)) * (amax / 127) * w_abs;
    }
  } else if (activation_type == DType::kBF16) {
    for (size_t j = 0; j < r.x.size(); ++j) bound += std::ldexp(1.0, -8) * std::fabs(static_cast<double>(r.w_hat[j]) * r.x[j]);
  }
  return bound;
}

TEST(RowDot, VectorKernelsEqualScalarUpToReassociation) {
  std::mt19937 rng(11);
  int checked = 0;
  for (DType type : kRowDotTypes) {
    const cpu::DotKernel* scalar = cpu::find_dot_kernel(type, cpu::Isa::kScalar);
    ASSERT_NE(scalar, nullptr) << dtype_name(type);
    for (cpu::Isa isa : {cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      const cpu::DotKernel* fast = cpu::find_dot_kernel(type, isa);
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
  for (DType type : kRowDotTypes) {
    const cpu::DotKernel* scalar = cpu::find_dot_kernel(type, cpu::Isa::kScalar);
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
  std::vector<std::byte> row(cpu::activation_row_bytes(DType::kQ8_0, 32));
  cpu::quantize_activation_row(DType::kQ8_0, x.data(), 32, row.data());
  quant::BlockQ8_0 block;
  std::memcpy(&block, row.data(), sizeof block);
  EXPECT_EQ(block.d, f32_to_f16(1.f / 127));
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], -1);
  EXPECT_NEAR(block.qs[2], 64, 1);
  EXPECT_EQ(block.qs[3], -127);
  EXPECT_EQ(block.qs[4], 0);
}

TEST(RowDot, OnlyTheListedTypesHaveKernels) {
  for (DType type : {DType::kF32, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
    EXPECT_EQ(cpu::find_dot_kernel(type, cpu::Isa::kScalar), nullptr) << dtype_name(type);
  }
}

}  // namespace
}  // namespace star
