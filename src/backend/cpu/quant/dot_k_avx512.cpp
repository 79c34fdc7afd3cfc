// The Q5_K row dot (k_quant_dot_body.h) for CPUs with AVX-512 VNNI: the codes are unsigned, so
// vpdpbusd takes them as they are; a second vpdpbusd with ones gives Σ a_j for the min.
// Compiled with a target attribute: best_isa() picks it.
#include <immintrin.h>

#include "row_dots.h"

#define STAR_K_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace star::cpu::row_dots {
namespace {

STAR_K_TARGET __m256i code_dots(__m256i codes, __m256i aq) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), codes, aq);
}

}  // namespace
}  // namespace star::cpu::row_dots

#include "k_quant_dot_body.h"

namespace star::cpu::row_dots {

STAR_K_TARGET float q5_k_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return k_dot<true, BlockQ5_K>(w, x, k);
}

}  // namespace star::cpu::row_dots
