// A software prefetch for the decode tiles, whatever their instruction set.
#pragma once

#include <immintrin.h>

namespace star::cpu::row_dots {

// Decode reads each weight byte once, from memory, each thread one sequential stream; the hardware
// prefetchers alone keep too few lines in flight for a core to reach the memory's rate. The tiles
// ask for the line this far ahead of the block they read (past a row's end: the next rows, which
// follow it). `small` Q4_0 decode, 2 threads, medians of 5 alternated runs: 129 tokens/s without,
// 149 with 2048 bytes (1024: about the same, noisier).
inline constexpr int kWeightPrefetchBytes = 2048;

inline void prefetch_weights(const void* block) {
  _mm_prefetch(static_cast<const char*>(block) + kWeightPrefetchBytes, _MM_HINT_T0);
}

// Every line of the block as far ahead: a K-quant super-block (144 bytes Q4_K, 210 Q6_K) spans
// three or four lines, of which one prefetch a super-block asked for only one (131072x768 at one
// row, 2 threads, medians of 21 calls: Q4_K 4.3-4.5 -> 4.1 ms, Q6_K 5.6-5.8 -> 4.2-4.4 ms).
template <class Block>
inline void prefetch_weight_block(const Block* block) {
  const char* ahead = reinterpret_cast<const char*>(block) + kWeightPrefetchBytes;
  for (size_t offset = 0; offset < sizeof(Block); offset += 64) _mm_prefetch(ahead + offset, _MM_HINT_T0);
  if (sizeof(Block) % 64 != 0) _mm_prefetch(ahead + sizeof(Block) - 1, _MM_HINT_T0);
}

}  // namespace star::cpu::row_dots
