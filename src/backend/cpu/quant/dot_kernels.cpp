#include "star/backend/cpu/dot_kernels.h"

#include <algorithm>
#include <atomic>
#include <span>

#include "row_dots.h"

namespace star::cpu {
namespace {

struct KernelRow {
  DType weight_type;
  DotKernel by_isa[3];  // indexed by Isa
};

const KernelRow kKernels[] = {
    {DType::kQ4_0,
     {{ActivationType::kQ8_0, row_dots::q4_0_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q4_0_q8_0_avx2, row_dots::q4_0_q8_0_tile_avx2},
      {ActivationType::kQ8_0, row_dots::q4_0_q8_0_avx512, row_dots::q4_0_q8_0_tile_avx512}}},
    {DType::kQ8_0,
     {{ActivationType::kQ8_0, row_dots::q8_0_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q8_0_q8_0_avx2, row_dots::q8_0_q8_0_tile_avx2},
      {ActivationType::kQ8_0, row_dots::q8_0_q8_0_avx512, row_dots::q8_0_q8_0_tile_avx512}}},
    {DType::kQ4_1,
     {{ActivationType::kQ8_1, row_dots::q4_1_q8_1_scalar},
      {ActivationType::kQ8_1, row_dots::q4_1_q8_1_avx2},
      {ActivationType::kQ8_1, row_dots::q4_1_q8_1_avx512}}},
    {DType::kQ5_0,
     {{ActivationType::kQ8_0, row_dots::q5_0_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q5_0_q8_0_avx2},
      {ActivationType::kQ8_0, row_dots::q5_0_q8_0_avx512}}},
    {DType::kQ5_1,
     {{ActivationType::kQ8_1, row_dots::q5_1_q8_1_scalar},
      {ActivationType::kQ8_1, row_dots::q5_1_q8_1_avx2},
      {ActivationType::kQ8_1, row_dots::q5_1_q8_1_avx512}}},
    {DType::kQ6_K,
     {{ActivationType::kQ8_0, row_dots::q6_k_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q6_k_q8_0_avx2},
      {ActivationType::kQ8_0, row_dots::q6_k_q8_0_avx512, row_dots::q6_k_q8_0_tile_avx512}}},
    {DType::kQ4_K,
     {{ActivationType::kQ8_0, row_dots::q4_k_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q4_k_q8_0_avx2},
      {ActivationType::kQ8_0, row_dots::q4_k_q8_0_avx512, row_dots::q4_k_q8_0_tile_avx512}}},
    {DType::kQ5_K,
     {{ActivationType::kQ8_0, row_dots::q5_k_q8_0_scalar},
      {ActivationType::kQ8_0, row_dots::q5_k_q8_0_avx2},
      {ActivationType::kQ8_0, row_dots::q5_k_q8_0_avx512}}},
    {DType::kF16,
     {{ActivationType::kF32, row_dots::f16_f32_scalar},
      {ActivationType::kF32, row_dots::f16_f32_avx2},
      {ActivationType::kF32, row_dots::f16_f32_avx512}}},
    {DType::kBF16,
     {{ActivationType::kBF16, row_dots::bf16_bf16_scalar},
      {ActivationType::kBF16, row_dots::bf16_bf16_avx2},
      {ActivationType::kBF16, row_dots::bf16_bf16_avx512}}},
};

// Kernels with Q16 activations (find_q16_dot_kernel); Q6_K has no AVX2 one.
const KernelRow kQ16Kernels[] = {
    {DType::kQ4_1,
     {{ActivationType::kQ16, row_dots::q4_1_q16_scalar},
      {ActivationType::kQ16, row_dots::q4_1_q16_avx2, row_dots::q4_1_q16_tile_avx2},
      {ActivationType::kQ16, row_dots::q4_1_q16_avx512, row_dots::q4_1_q16_tile_avx512}}},
    {DType::kQ6_K,
     {{ActivationType::kQ16, row_dots::q6_k_q16_scalar},
      {ActivationType::kQ16, nullptr},
      {ActivationType::kQ16, row_dots::q6_k_q16_avx512, row_dots::q6_k_q16_tile_avx512}}},
    {DType::kQ8_0,
     {{ActivationType::kQ16, row_dots::q8_0_q16_scalar},
      {ActivationType::kQ16, row_dots::q8_0_q16_avx2, row_dots::q8_0_q16_tile_avx2},
      {ActivationType::kQ16, row_dots::q8_0_q16_avx512, row_dots::q8_0_q16_tile_avx512}}},
};

// Kernels that keep the activations in float32 (find_float_dot_kernel).
const KernelRow kFloatKernels[] = {
    {DType::kQ4_1,
     {{ActivationType::kF32, row_dots::q4_1_f32_scalar},
      {ActivationType::kF32, row_dots::q4_1_f32_avx2},
      {ActivationType::kF32, row_dots::q4_1_f32_avx512}}},
    {DType::kQ8_0,
     {{ActivationType::kF32, row_dots::q8_0_f32_scalar},
      {ActivationType::kF32, row_dots::q8_0_f32_avx2, row_dots::q8_0_f32_tile_avx2},
      {ActivationType::kF32, row_dots::q8_0_f32_avx512, row_dots::q8_0_f32_tile_avx512}}},
    {DType::kQ6_K,
     {{ActivationType::kF32, row_dots::q6_k_f32_scalar},
      {ActivationType::kF32, row_dots::q6_k_f32_avx2},
      {ActivationType::kF32, row_dots::q6_k_f32_avx512}}},
    {DType::kF16,
     {{ActivationType::kF32, row_dots::f16_f32_scalar},
      {ActivationType::kF32, row_dots::f16_f32_avx2},
      {ActivationType::kF32, row_dots::f16_f32_avx512}}},
    {DType::kBF16,
     {{ActivationType::kF32, row_dots::bf16_f32_scalar},
      {ActivationType::kF32, row_dots::bf16_f32_avx2},
      {ActivationType::kF32, row_dots::bf16_f32_tile_dot_avx512, row_dots::bf16_f32_tile_avx512}}},
};

Isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
      __builtin_cpu_supports("f16c")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    return Isa::kAvx2;
  }
  return Isa::kScalar;
}

Isa detected_isa() {
  static const Isa isa = detect_isa();
  return isa;
}

bool cpu_has_avx512_bf16() {
  static const bool bf16 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return bf16;
}

std::atomic<Isa> isa_limit{Isa::kAvx512};

const DotKernel* find_in(std::span<const KernelRow> table, DType weight_type, Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected_isa())) return nullptr;
  for (const KernelRow& row : table) {
    if (row.weight_type == weight_type) return &row.by_isa[static_cast<int>(isa)];
  }
  return nullptr;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

Isa best_isa() {
  return std::min(detected_isa(), isa_limit.load(std::memory_order_relaxed));
}

void limit_isa(Isa isa) { isa_limit.store(isa, std::memory_order_relaxed); }

bool has_bf16_products() { return cpu_has_avx512_bf16() && best_isa() == Isa::kAvx512; }

const DotKernel* find_dot_kernel(DType weight_type, Isa isa) {
  // The AVX-512 BF16 kernel multiplies with vdpbf16ps; AVX-512 VNNI CPUs without it (some cloud
  // Xeons) widen the bf16 weights to float32 in registers, in a register tile.
  static const DotKernel kWidenedBf16{ActivationType::kBF16, row_dots::bf16_bf16_widen_avx512,
                                      row_dots::bf16_bf16_tile_avx512};
  if (weight_type == DType::kBF16 && isa == Isa::kAvx512 && !cpu_has_avx512_bf16()) {
    return detected_isa() == Isa::kAvx512 ? &kWidenedBf16 : nullptr;
  }
  return find_in(kKernels, weight_type, isa);
}

const DotKernel* find_q16_dot_kernel(DType weight_type, Isa isa) {
  const DotKernel* kernel = find_in(kQ16Kernels, weight_type, isa);
  return kernel != nullptr && kernel->dot != nullptr ? kernel : nullptr;
}

const DotKernel* find_float_dot_kernel(DType weight_type, Isa isa) {
  return find_in(kFloatKernels, weight_type, isa);
}

}  // namespace star::cpu
