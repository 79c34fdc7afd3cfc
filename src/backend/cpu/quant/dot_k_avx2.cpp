// Q4_K, Q5_K (k_quant_dot_body.h) and Q6_K (q6_k_dot_body.h) row dots for CPUs with AVX2,
// vpmaddubsw + vpmaddwd in place of vpdpbusd: the codes are unsigned and below 64, so the 16-bit
// pair sums (at most 2·63·128) cannot saturate. Compiled with a target attribute: best_isa() picks it.
#include <immintrin.h>

#include "row_dots.h"

#define STAR_K_TARGET __attribute__((target("avx2,fma,f16c")))

namespace star::cpu::row_dots {
namespace {

STAR_K_TARGET __m256i code_dots(__m256i codes, __m256i aq) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, aq), _mm256_set1_epi16(1));
}

}  // namespace
}  // namespace star::cpu::row_dots

#include "k_quant_dot_body.h"
#include "q6_k_dot_body.h"

namespace star::cpu::row_dots {

STAR_K_TARGET float q4_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  return k_dot<false, BlockQ4_K>(w, x, k);
}
STAR_K_TARGET float q5_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  return k_dot<true, BlockQ5_K>(w, x, k);
}
STAR_K_TARGET float q6_k_q8_0_avx2(const std::byte* w, const std::byte* x, int64_t k) {
  return q6_k_dot(w, x, k);
}

}  // namespace star::cpu::row_dots
