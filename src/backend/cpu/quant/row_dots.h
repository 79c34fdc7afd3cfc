// The row-dot kernels behind find_dot_kernel (star/backend/cpu/dot_kernels.h), one function per
// weight type and instruction set. Weight rows are whole blocks; k is the row's element count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace star::cpu::row_dots {

// Plain C++: the references.
float q4_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float f16_f32_scalar(const std::byte* w, const std::byte* x, int64_t k);
float bf16_bf16_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_q8_1_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_q16_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_q16_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q16_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q5_0_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q5_1_q8_1_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_f32_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_f32_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_f32_scalar(const std::byte* w, const std::byte* x, int64_t k);
float bf16_f32_scalar(const std::byte* w, const std::byte* x, int64_t k);

// AVX2 + FMA + F16C.
float q4_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float f16_f32_avx2(const std::byte* w, const std::byte* x, int64_t k);
float bf16_bf16_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_q8_1_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q5_0_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q5_1_q8_1_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_f32_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_f32_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_f32_avx2(const std::byte* w, const std::byte* x, int64_t k);
float bf16_f32_avx2(const std::byte* w, const std::byte* x, int64_t k);

// AVX-512 VNNI (vpdpbusd on 256-bit lanes) and AVX-512 BF16 (vdpbf16ps).
float q4_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);
float f16_f32_avx512(const std::byte* w, const std::byte* x, int64_t k);
float bf16_bf16_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_q8_1_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q5_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q5_1_q8_1_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_f32_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q4_1_f32_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_f32_avx512(const std::byte* w, const std::byte* x, int64_t k);

// Register tiles (RowTile in star/backend/cpu/dot_kernels.h) whose 1x1 case is the dot above.
void q8_0_q8_0_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                         int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q4_0_q8_0_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                         int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q8_0_f32_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
// Q4_1 and Q8_0 against Q16 activations (q16_tiles_avx2.cpp).
float q4_1_q16_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q16_avx2(const std::byte* w, const std::byte* x, int64_t k);
void q4_1_q16_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q8_0_q16_tile_avx2(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                        int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q8_0_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q4_0_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q8_0_f32_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);

void q6_k_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q4_k_q8_0_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);

// BF16 against BF16 activations for AVX-512 CPUs without AVX512-BF16 (bf16_tile_avx512.cpp).
float bf16_bf16_widen_avx512(const std::byte* w, const std::byte* x, int64_t k);
void bf16_bf16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                           int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
// BF16 against float32 activations in the same register tiles (bf16_tile_avx512.cpp): the logits of
// a BF16 output projection.
float bf16_f32_tile_dot_avx512(const std::byte* w, const std::byte* x, int64_t k);
void bf16_f32_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);

// Against Q16 activations: Q4_1 (q4_1_tile_avx512.cpp), Q6_K and Q8_0 (q16_output_tiles_avx512.cpp).
float q4_1_q16_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q6_k_q16_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q8_0_q16_avx512(const std::byte* w, const std::byte* x, int64_t k);
void q6_k_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q8_0_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);
void q4_1_q16_tile_avx512(const std::byte* w, size_t w_row_bytes, int64_t m, const std::byte* x, size_t x_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy, bool accumulate);

// Q4_K and Q5_K against Q8_0 activations (dot_k_*.cpp, q4_k_tile_avx512.cpp): scalar, AVX2,
// AVX-512 VNNI.
float q4_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q5_k_q8_0_scalar(const std::byte* w, const std::byte* x, int64_t k);
float q4_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q5_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k);
float q4_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);
float q5_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k);

}  // namespace star::cpu::row_dots
