// Dense matrix products on the CPU (OpenBLAS).
#pragma once

#include <cstdint>

namespace star::cpu {

// y[n, m] = x[n, k] · w[m, k]^T, or y += ... when `accumulate`.
// w is in HF Linear layout [out_features = m, in_features = k]. All three are row-major, dense, and
// must not overlap. n == 1 (decoding) takes the matrix-vector path. Each dimension must fit in an int
// (the BLAS index type).
void matmul_nt(const float* x, int64_t n, int64_t k, const float* w, int64_t m, float* y,
               bool accumulate = false);

}  // namespace star::cpu
