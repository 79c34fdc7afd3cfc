// The bf16 pairs that the decode row blocks multiply with AVX512-BF16 (attention_blocks.h).
#include <cstdint>

#include "attention_blocks.h"

#if defined(__AVX512BF16__)

namespace star::cpu::attention_blocks {
namespace {

// How far ahead of the rows it reads interleave_value_pairs asks for the cache's lines.
constexpr int64_t kPairPrefetchBytes = 4096;

}  // namespace

void round_to_bf16(const float* src, int64_t n, uint32_t* dst) {
  auto* out = reinterpret_cast<char*>(dst);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
  }
  for (; i < n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), (__m128i)_mm256_cvtneps_pbh(_mm256_loadu_ps(src + i)));
  }
}

void interleave_value_pairs(const uint16_t* v, int64_t ldv_src, int64_t keys, int64_t d, int64_t heads,
                            uint32_t* v2, int64_t ldv, int64_t head_stride) {
  // Word k of the low half: element k of the first key, then of the second (index 32 + k picks
  // from the second operand); the high half the same for elements 16 + k.
  alignas(64) uint16_t low[32], high[32];
  for (int k = 0; k < 16; ++k) {
    low[2 * k] = static_cast<uint16_t>(k);
    low[2 * k + 1] = static_cast<uint16_t>(32 + k);
    high[2 * k] = static_cast<uint16_t>(16 + k);
    high[2 * k + 1] = static_cast<uint16_t>(48 + k);
  }
  const __m512i pick_low = _mm512_load_si512(low);
  const __m512i pick_high = _mm512_load_si512(high);
  // Key pair by key pair, every head of the pair's two rows before the next pair: the cache rows
  // are read front to back, as the float32 tiles read them.
  const int64_t pair_bytes = 2 * ldv_src * int64_t{sizeof(uint16_t)};
  for (int64_t c = 0; 2 * c < keys; ++c) {
    const uint16_t* first = v + 2 * c * ldv_src;
    const bool second = 2 * c + 1 < keys;
    const char* ahead = reinterpret_cast<const char*>(first) + kPairPrefetchBytes;
    for (int64_t line = 0; line < pair_bytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
    for (int64_t h = 0; h < heads; ++h) {
      uint32_t* dst = v2 + h * head_stride + c * ldv;
      for (int64_t i = 0; i < d; i += 32) {
        const __m512i a = _mm512_loadu_si512(first + h * d + i);
        const __m512i b = second ? _mm512_loadu_si512(first + ldv_src + h * d + i) : _mm512_setzero_si512();
        _mm512_storeu_si512(dst + i, _mm512_permutex2var_epi16(a, pick_low, b));
        _mm512_storeu_si512(dst + i + 16, _mm512_permutex2var_epi16(a, pick_high, b));
      }
    }
  }
}

}  // namespace star::cpu::attention_blocks

#endif
