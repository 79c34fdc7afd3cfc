// Q4_1, Q5_0 and Q5_1 row dots for CPUs with AVX-512 VNNI: vpdpbusd on 256-bit lanes, one block a
// register (each block has its own scale). Unsigned codes (Q4_1, Q5_1) are vpdpbusd's unsigned
// operand as they are; Q5_0's signed ones go through the sign trick. Q5's fifth bits come from a
// mask register. Two accumulators hide the FMA latency; the offsets' m·s are summed beside.
#include <immintrin.h>

#include <cstring>

#include "legacy_block_simd.h"
#include "row_dots.h"
#include "star/quant/blocks.h"

#define STAR_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace star::cpu::row_dots {
namespace {

using quant::kLegacyBlock;

STAR_AVX512 __m256 unsigned_block_dot(__m256i w, __m256i x) {
  return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x));
}

STAR_AVX512 __m256 signed_block_dot(__m256i w, __m256i x) {
  return unsigned_block_dot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

STAR_AVX512 __m256 scale(uint16_t dw, uint16_t dx) { return _mm256_set1_ps(_cvtsh_ss(dw) * _cvtsh_ss(dx)); }

STAR_AVX512 __m256i load_qs(const int8_t* qs) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)); }

STAR_AVX512 __m256i q5_codes(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return _mm256_or_si256(nibble_bytes(qs), _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(0x10)));
}

STAR_AVX512 __m256 q4_1_block(const quant::BlockQ4_1& w, const quant::BlockQ8_1& x, __m256 acc) {
  return _mm256_fmadd_ps(scale(w.d, x.d), unsigned_block_dot(nibble_bytes(w.qs), load_qs(x.qs)), acc);
}

STAR_AVX512 __m256 q5_0_block(const quant::BlockQ5_0& w, const quant::BlockQ8_0& x, __m256 acc) {
  const __m256i codes = _mm256_sub_epi8(q5_codes(w.qs, w.qh), _mm256_set1_epi8(16));
  return _mm256_fmadd_ps(scale(w.d, x.d), signed_block_dot(codes, load_qs(x.qs)), acc);
}

STAR_AVX512 __m256 q5_1_block(const quant::BlockQ5_1& w, const quant::BlockQ8_1& x, __m256 acc) {
  return _mm256_fmadd_ps(scale(w.d, x.d), unsigned_block_dot(q5_codes(w.qs, w.qh), load_qs(x.qs)), acc);
}

// The row's blocks in two independent FMA chains; the offset types (a weight block with m) add
// m·s per block beside, in float.
template <typename WBlock, typename XBlock, __m256 (*kBlockDot)(const WBlock&, const XBlock&, __m256)>
STAR_AVX512 float paired_block_dot(const std::byte* w, const std::byte* x, int64_t k) {
  const auto* wb = reinterpret_cast<const WBlock*>(w);
  const auto* xb = reinterpret_cast<const XBlock*>(x);
  const int64_t blocks = k / kLegacyBlock;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    acc0 = kBlockDot(wb[b], xb[b], acc0);
    acc1 = kBlockDot(wb[b + 1], xb[b + 1], acc1);
  }
  if (b < blocks) acc0 = kBlockDot(wb[b], xb[b], acc0);
  float offsets = 0.f;
  if constexpr (requires(const WBlock& block) { block.m; }) {
    for (b = 0; b < blocks; ++b) offsets += _cvtsh_ss(wb[b].m) * _cvtsh_ss(xb[b].s);
  }
  return horizontal_sum_8(_mm256_add_ps(acc0, acc1)) + offsets;
}

}  // namespace

STAR_AVX512 float q4_1_q8_1_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return paired_block_dot<quant::BlockQ4_1, quant::BlockQ8_1, q4_1_block>(w, x, k);
}

STAR_AVX512 float q5_0_q8_0_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return paired_block_dot<quant::BlockQ5_0, quant::BlockQ8_0, q5_0_block>(w, x, k);
}

STAR_AVX512 float q5_1_q8_1_avx512(const std::byte* w, const std::byte* x, int64_t k) {
  return paired_block_dot<quant::BlockQ5_1, quant::BlockQ8_1, q5_1_block>(w, x, k);
}

}  // namespace star::cpu::row_dots
