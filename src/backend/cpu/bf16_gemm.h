// The bfloat16 matrix product behind matmul's many-row path: oneDNN's matmul, which runs on
// AVX512-BF16 (vdpbf16ps) at about twice sgemm's rate on the CPUs that have it. Debian's OpenBLAS
// (0.3.21) is built without cblas_sbgemm, so oneDNN is the library that has one.
#pragma once

#include <cstdint>

namespace star::cpu {

// Whether bf16_gemm_nt runs at bf16 speed here: the CPU has AVX512-BF16 (and best_isa() is not
// capped below it; tests cap it to keep every product float32).
bool bf16_gemm_fast();

// y[n, m] = x[n, k] · w[m, k]^T, or y += ... when `accumulate`; x and w bfloat16 bits (rows k apart),
// y float32 with rows ldy apart. False, y untouched, when oneDNN could not create or run the
// product; the caller then takes another path.
bool bf16_gemm_nt(const uint16_t* x, int64_t n, int64_t k, const uint16_t* w, int64_t m, float* y, int64_t ldy,
                  bool accumulate);

}  // namespace star::cpu
