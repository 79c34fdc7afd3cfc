#include "star/backend/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <iterator>
#include <vector>

#include "attention_blocks.h"
#include "kv_rows.h"
#include "simd.h"
#include "star/attention/merge.h"
#include "star/backend/cpu/attention_kernel_clock.h"

namespace star::cpu {
namespace {

using attention_blocks::for_each_block;
using attention_blocks::kMaxDecodeRows;
using attention_blocks::kMaxRowVectors;
using attention_blocks::kRowBlockRows;
using attention_blocks::kWideLanes;
using simd::kLanes;
using simd::Vec;

constexpr int64_t kKeyTile = 96;  // keys per tile (one kv head); a multiple of every block height
constexpr int64_t kMinKeyTile = 24;  // the smallest multiple of every block height
constexpr int64_t kPackedTileBytes = 512 * 1024;  // packed K and V tiles of a task stay within L2
// Rows of one kv head in a query tile: up to four row-vector groups share each packed key tile.
constexpr int64_t kQueryTileRows = 4 * kMaxRowVectors * kLanes;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Calls fn.template operator()<NK>(c) for blocks of NK wide key vectors, from column c, that cover
// `vectors` of them: kMax at a time, then what remains (fewer than 4) as one block.
template <int kMax, typename Fn>
void for_each_key_block(int64_t vectors, Fn&& fn) {
  static_assert(kMax >= 1 && kMax <= 4, "the remainder's blocks go up to 3");
  int64_t v = 0;
  for (; v + kMax <= vectors; v += kMax) fn.template operator()<kMax>(v * kWideLanes);
  switch (vectors - v) {
    case 3: return fn.template operator()<3>(v * kWideLanes);
    case 2: return fn.template operator()<2>(v * kWideLanes);
    case 1: return fn.template operator()<1>(v * kWideLanes);
    default: return;
  }
}

// The problem as given to attention_forward, plus how it is cut into tasks.
struct Problem {
  const float* q;
  KvRows k;
  KvRows v;
  int64_t nq, nk, n_heads, n_kv_heads, head_dim;
  int64_t group;           // query heads per kv head
  float log2_scale;        // scale * log2(e): scores live in base 2 so exp2 replaces exp
  AttentionMask mask;
  int64_t tile_tokens;     // query tokens per task
  int64_t segment_tokens;  // query tokens of one independent query (attention_forward_shared_keys)
  int64_t heads_per_task;  // kv heads per task: 1, or all of them for short queries
  int64_t key_tile;        // keys per tile
  bool skip_softmax;       // Skip Softmax is on: 0 < lambda < 1
  float log2_lambda;       // its threshold, in the base-2 score domain
};

// Row stride of packed key and value tiles: an odd number of cache lines spreads the rows over
// the L1 sets.
int64_t packed_row_floats(int64_t head_dim) {
  const int64_t lines = ceil_div(head_dim, 16);
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

enum class TileVisibility { kNone, kSome, kAll };

// Which of keys [j_first, j_last] queries at positions [pos_first, pos_last] see
// (position = causal_offset + query index).
TileVisibility classify(const AttentionMask& mask, int64_t pos_first, int64_t pos_last,
                        int64_t j_first, int64_t j_last) {
  if (mask.causal && j_first > pos_last) return TileVisibility::kNone;
  bool all = !mask.causal || j_last <= pos_first;
  if (mask.window.bounded()) {
    // Keys [sink, pos - window] are outside the window of the query at pos.
    const int64_t sink = mask.window.sink;
    if (j_first >= sink && j_last <= pos_first - mask.window.window) return TileVisibility::kNone;
    all = all && (j_last < sink || j_first > pos_last - mask.window.window);
  }
  return all ? TileVisibility::kAll : TileVisibility::kSome;
}

// Per-thread state for one task: query tokens [t_begin, t_end) of kv heads
// [h_begin, h_begin + heads) (each with its group of query heads) against keys
// [key_begin, key_end). Rows of one kv head are (token, head in group) pairs, r = t * group + g.
class TileWorker {
 public:
  // Scratch is left uninitialised: every task writes what it reads, and zeroing megabytes per call
  // would show in short decoding steps. It is the thread's own and kept between calls: a decoding
  // step calls the kernel once per layer and sequence, and buffers allocated per call come back as
  // fresh pages (glibc maps large blocks anew), a page fault every 4 KiB.
  explicit TileWorker(const Problem& p) : p_(p) {
    const int64_t max_pad = ceil_div(p.tile_tokens * p.group, kLanes) * kLanes;
    state_stride_ = p.head_dim * max_pad;
    row_stride_ = max_pad;
    ld_packed_ = packed_row_floats(p.head_dim);
    // Row-major decides by one query's rows, so that each of several queries sharing the call
    // takes the path (and the arithmetic) it takes alone.
    // The bf16 pairs exist only in the row blocks, which then take a query of any length.
    bf16_pairs_ = attention_rounds_to_bf16(p.segment_tokens, p.n_heads, p.n_kv_heads, p.head_dim, p.k.dtype,
                                           p.skip_softmax);
    row_major_ = bf16_pairs_ || (p.segment_tokens * p.group <= kMaxDecodeRows && p.head_dim % kWideLanes == 0);
    key_rows_ = ceil_div(p.key_tile, kWideLanes) * kWideLanes;
    const int64_t tile_floats = p.heads_per_task * key_rows_ * ld_packed_;
    const bool float_rows = row_major_ && !bf16_pairs_;
    // Keys go row by row into k_tile_ for the column blocks, on their side into kt_tile_ (by way of
    // key_block_) for the row blocks.
    const int64_t sizes[] = {p.heads_per_task * state_stride_,
                             p.heads_per_task * state_stride_,
                             p.heads_per_task * max_pad,
                             p.heads_per_task * max_pad,
                             p.key_tile * kMaxRowVectors * kLanes,
                             bf16_pairs_ ? 0 : tile_floats,
                             row_major_ ? 0 : tile_floats,
                             float_rows ? p.heads_per_task * p.head_dim * key_rows_ : 0,
                             float_rows ? p.heads_per_task * kWideLanes * p.head_dim : 0};
    float* buffers[std::size(sizes)];
    thread_scratch(sizes, buffers);
    // bf16 pairs: queries, keys on their side, values interleaved by key pairs, probabilities.
    const int64_t words = p.head_dim / 2;
    const int64_t pair_sizes[] = {bf16_pairs_ ? p.heads_per_task * max_pad * words : 0,
                                  bf16_pairs_ ? p.heads_per_task * words * key_rows_ : 0,
                                  bf16_pairs_ ? p.heads_per_task * key_rows_ / 2 * ld_packed_ : 0,
                                  bf16_pairs_ ? kRowBlockRows * key_rows_ / 2 : 0,
                                  bf16_pairs_ ? p.heads_per_task * kWideLanes * words : 0};
    uint32_t* pair_buffers[std::size(pair_sizes)];
    thread_scratch(pair_sizes, pair_buffers);
    q2_ = pair_buffers[0];
    kt2_ = pair_buffers[1];
    v2_ = pair_buffers[2];
    p2_ = pair_buffers[3];
    key_block2_ = pair_buffers[4];
    qt_ = buffers[0];
    ot_ = buffers[1];
    max_run_ = buffers[2];
    sum_run_ = buffers[3];
    st_ = buffers[4];
    v_tile_ = buffers[5];
    k_tile_ = buffers[6];
    kt_tile_ = buffers[7];
    key_block_ = buffers[8];
    thread_local std::vector<int64_t> row_positions;
    if (static_cast<int64_t>(row_positions.size()) < max_pad) row_positions.resize(static_cast<size_t>(max_pad));
    row_pos_ = row_positions.data();
  }

  SkipSoftmaxTiles tiles() const { return tiles_; }

  // Writes the task's rows of out [nq, Hq, d] and lse [nq, Hq] (attention over its keys only).
  void run(int64_t h_begin, int64_t t_begin, int64_t t_end, int64_t key_begin, int64_t key_end,
           float* out, float* lse) {
    h_begin_ = h_begin;
    heads_ = std::min(p_.heads_per_task, p_.n_kv_heads - h_begin);
    rows_ = (t_end - t_begin) * p_.group;
    row_vectors_ = ceil_div(rows_, kLanes);
    row_pad_ = row_vectors_ * kLanes;
    for (int64_t r = 0; r < row_pad_; ++r) {
      row_pos_[r] = p_.mask.causal_offset + t_begin + std::min(r, rows_ - 1) / p_.group;
    }
    for (int64_t hh = 0; hh < heads_; ++hh) load_queries(hh, t_begin);
    const int64_t pos_first = p_.mask.causal_offset + t_begin;
    const int64_t pos_last = p_.mask.causal_offset + t_end - 1;
    for (int64_t j0 = key_begin; j0 < key_end; j0 += p_.key_tile) {
      if (p_.mask.causal && j0 > pos_last) break;
      const int64_t bc = std::min(p_.key_tile, key_end - j0);
      const TileVisibility vis = classify(p_.mask, pos_first, pos_last, j0, j0 + bc - 1);
      if (vis == TileVisibility::kNone) continue;
      // With Skip Softmax on, values wait for a vote that keeps the tile (need_values).
      pack_keys_values(j0, bc, true, !p_.skip_softmax);
      values_packed_ = !p_.skip_softmax;
      for (int64_t hh = 0; hh < heads_; ++hh) {
        if (row_major_) {
          // A row's arithmetic does not depend on the rows beside it in a block; with Skip
          // Softmax, which votes by block, one query's rows (at most kMaxDecodeRows) share one.
          for (int64_t r0 = 0; r0 < rows_; r0 += kRowBlockRows) {
            attend_rows_dispatch(std::min<int64_t>(kRowBlockRows, rows_ - r0), hh, r0, j0, bc,
                                 vis == TileVisibility::kSome);
          }
          continue;
        }
        for (int64_t rv0 = 0; rv0 < row_vectors_; rv0 += kMaxRowVectors) {
          attend_dispatch(std::min<int64_t>(kMaxRowVectors, row_vectors_ - rv0), hh, rv0 * kLanes,
                          j0, bc, vis == TileVisibility::kSome);
        }
      }
    }
    for (int64_t hh = 0; hh < heads_; ++hh) store_output(hh, t_begin, out, lse);
  }

 private:
  // buffers[i] = sizes[i] elements of the calling thread's scratch (one arena per element type),
  // each 64-byte aligned.
  template <typename T, size_t N>
  static void thread_scratch(const int64_t (&sizes)[N], T* (&buffers)[N]) {
    static_assert(sizeof(T) == 4);
    constexpr int64_t kAlign = 16;  // elements in a cache line
    thread_local std::vector<T> arena;
    int64_t total = kAlign;
    for (int64_t n : sizes) total += ceil_div(n, kAlign) * kAlign;
    if (static_cast<int64_t>(arena.size()) < total) arena.resize(static_cast<size_t>(total));
    const auto misalign = reinterpret_cast<uintptr_t>(arena.data()) % (kAlign * sizeof(T)) / sizeof(T);
    T* next = arena.data() + (misalign == 0 ? 0 : kAlign - static_cast<int64_t>(misalign));
    for (size_t i = 0; i < N; ++i) {
      buffers[i] = next;
      next += ceil_div(sizes[i], kAlign) * kAlign;
    }
  }
  float* qt(int64_t hh) { return qt_ + hh * state_stride_; }
  float* ot(int64_t hh) { return ot_ + hh * state_stride_; }
  float* max_run(int64_t hh) { return max_run_ + hh * row_stride_; }
  float* sum_run(int64_t hh) { return sum_run_ + hh * row_stride_; }
  const float* k_tile(int64_t hh) const { return k_tile_ + hh * key_rows_ * ld_packed_; }
  const float* v_tile(int64_t hh) const { return v_tile_ + hh * key_rows_ * ld_packed_; }
  const float* kt_tile(int64_t hh) const { return kt_tile_ + hh * p_.head_dim * key_rows_; }
  uint32_t* q2(int64_t hh) { return q2_ + hh * row_stride_ * (p_.head_dim / 2); }
  uint32_t* kt2(int64_t hh) { return kt2_ + hh * (p_.head_dim / 2) * key_rows_; }
  uint32_t* v2(int64_t hh) { return v2_ + hh * key_rows_ / 2 * ld_packed_; }

  // qt = scaled queries of kv head h_begin + hh, [d, row_pad] transposed or [rows, d] row-major;
  // resets its softmax state.
  void load_queries(int64_t hh, int64_t t_begin) {
    const int64_t d = p_.head_dim;
    float* q_t = qt(hh);
    if (row_major_) {
      for (int64_t r = 0; r < rows_; ++r) {
        const float* src = p_.q + ((t_begin + r / p_.group) * p_.n_heads +
                                   (h_begin_ + hh) * p_.group + r % p_.group) * d;
        for (int64_t i = 0; i < d; ++i) q_t[r * d + i] = src[i] * p_.log2_scale;
#if defined(__AVX512BF16__)
        if (bf16_pairs_) attention_blocks::round_to_bf16(q_t + r * d, d, q2(hh) + r * (d / 2));
#endif
        max_run(hh)[r] = kNegInf;
        sum_run(hh)[r] = 0.f;
      }
      std::fill(ot(hh), ot(hh) + rows_ * d, 0.f);
      return;
    }
    for (int64_t r = 0; r < row_pad_; ++r) {
      float* dst = q_t + r;
      if (r >= rows_) {
        for (int64_t i = 0; i < d; ++i) dst[i * row_pad_] = 0.f;
      } else {
        const int64_t t = t_begin + r / p_.group;
        const int64_t h = (h_begin_ + hh) * p_.group + r % p_.group;
        const float* src = p_.q + (t * p_.n_heads + h) * d;
        for (int64_t i = 0; i < d; ++i) dst[i * row_pad_] = src[i] * p_.log2_scale;
      }
      max_run(hh)[r] = kNegInf;
      sum_run(hh)[r] = 0.f;
    }
    std::fill(ot(hh), ot(hh) + d * row_pad_, 0.f);
  }

  // Picks the row decoder of the cache's element type (one switch per tile, not per row). Each
  // decoder is a lambda of its own type, so every instance inlines its decoder.
  void pack_keys_values(int64_t j0, int64_t bc, bool keys, bool values) {
    if (bf16_pairs_) return pack_pairs(j0, bc, keys, values);
    switch (p_.k.dtype) {
      case KvDType::kF32:
        return pack_keys_values(j0, bc, keys, values,
                                [](KvRows r, int64_t e, int64_t n, float* d) { kv_rows::decode_f32(r, e, n, d); });
      case KvDType::kBF16:
        return pack_keys_values(j0, bc, keys, values,
                                [](KvRows r, int64_t e, int64_t n, float* d) { kv_rows::decode_bf16(r, e, n, d); });
      case KvDType::kQ8_0:
        return pack_keys_values(j0, bc, keys, values,
                                [](KvRows r, int64_t e, int64_t n, float* d) { kv_rows::decode_q8_0(r, e, n, d); });
    }
  }

  // Skip Softmax packs a tile's values only once some vote keeps the tile, so a skipped tile never
  // reads V from the cache.
  void need_values(int64_t j0, int64_t bc) {
    if (values_packed_) return;
    pack_keys_values(j0, bc, false, true);
    values_packed_ = true;
  }

  // Decodes keys and values [j0, j0 + bc) of the task's kv heads into per-head contiguous float32
  // tiles, reading each cache row front to back. In place, one head's rows sit Hkv * d elements
  // apart, often a multiple of 4 KiB, so a block's rows would all compete for the same L1 set.
  template <typename DecodeRow>
  void pack_keys_values(int64_t j0, int64_t bc, bool keys, bool values, DecodeRow decode_row) {
    const int64_t d = p_.head_dim;
    const int64_t ldkv = p_.n_kv_heads * d;
    const int64_t head_tile = key_rows_ * ld_packed_;
    const KvRows k = p_.k.at(j0 * ldkv + h_begin_ * d);
    const KvRows v = p_.v.at(j0 * ldkv + h_begin_ * d);
    if (keys && row_major_) {
      pack_keys_transposed(k, bc, decode_row);
      keys = false;
    }
    for (int64_t c = 0; c < bc; ++c) {
      for (int64_t hh = 0; hh < heads_; ++hh) {
        const int64_t src = c * ldkv + hh * d;
        const int64_t dst = hh * head_tile + c * ld_packed_;
        if (keys) decode_row(k, src, d, k_tile_ + dst);
        if (values) decode_row(v, src, d, v_tile_ + dst);
      }
    }
  }

  // The bf16 pairs' tiles straight from the cache rows: keys turned on their side a word (two
  // elements) at a time, kWideLanes keys a block (a last partial block by way of key_block2_, zero
  // past bc), values interleaved by key pairs.
  void pack_pairs(int64_t j0, int64_t bc, bool keys, bool values) {
#if defined(__AVX512BF16__)
    const int64_t d = p_.head_dim;
    const int64_t words = d / 2;
    const int64_t ldkv = p_.n_kv_heads * d;
    const auto* k = reinterpret_cast<const uint16_t*>(p_.k.data) + j0 * ldkv + h_begin_ * d;
    const auto* v = reinterpret_cast<const uint16_t*>(p_.v.data) + j0 * ldkv + h_begin_ * d;
    for (int64_t c0 = 0; keys && c0 < bc; c0 += kWideLanes) {
      const int64_t n = std::min<int64_t>(kWideLanes, bc - c0);
      // The next block's rows (the tile's rows lie one after another), asked for while this one is
      // turned: a hint, so past the cache's end it reads nothing.
      const char* next = reinterpret_cast<const char*>(k + (c0 + kWideLanes) * ldkv);
      const int64_t block_bytes = kWideLanes * ldkv * int64_t{sizeof(uint16_t)};
      for (int64_t line = 0; line < block_bytes; line += 64) _mm_prefetch(next + line, _MM_HINT_T0);
      for (int64_t hh = 0; hh < heads_; ++hh) {
        const uint16_t* rows = k + c0 * ldkv + hh * d;
        if (n == kWideLanes) {
          attention_blocks::transpose_keys(reinterpret_cast<const uint32_t*>(rows), ldkv / 2, kWideLanes, words,
                                           kt2(hh) + c0, key_rows_);
          continue;
        }
        uint32_t* block = key_block2_ + hh * kWideLanes * words;
        for (int64_t c = 0; c < n; ++c) std::memcpy(block + c * words, rows + c * ldkv, d * sizeof(uint16_t));
        std::fill(block + n * words, block + kWideLanes * words, 0u);
        attention_blocks::transpose_keys(block, words, kWideLanes, words, kt2(hh) + c0, key_rows_);
      }
    }
    if (values) attention_blocks::interleave_value_pairs(v, ldkv, bc, d, heads_, v2_, ld_packed_,
                                                          key_rows_ / 2 * ld_packed_);
#else
    (void)j0, (void)bc, (void)keys, (void)values;
#endif
  }

  // The row blocks' keys: kWideLanes cache rows at a time decoded into key_block_ (in L1), then
  // turned on their side into kt_tile_; rows past bc up to a whole wide vector are zero, since
  // score_keys reads whole vectors.
  template <typename DecodeRow>
  void pack_keys_transposed(KvRows k, int64_t bc, DecodeRow decode_row) {
    const int64_t d = p_.head_dim;
    const int64_t ldkv = p_.n_kv_heads * d;
    const int64_t head_block = kWideLanes * d;
    for (int64_t c0 = 0; c0 < bc; c0 += kWideLanes) {
      const int64_t n = std::min<int64_t>(kWideLanes, bc - c0);
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t hh = 0; hh < heads_; ++hh) {
          decode_row(k, (c0 + c) * ldkv + hh * d, d, key_block_ + hh * head_block + c * d);
        }
      }
      for (int64_t hh = 0; hh < heads_; ++hh) {
        float* block = key_block_ + hh * head_block;
        std::fill(block + n * d, block + head_block, 0.f);
        attention_blocks::transpose_keys(block, d, kWideLanes, d, kt_tile_ + hh * d * key_rows_ + c0, key_rows_);
      }
    }
  }

  // Picks the row-block instance for `rows` (1 .. kRowBlockRows) query rows from row r0.
  template <int R = 1>
  void attend_rows_dispatch(int64_t rows, int64_t hh, int64_t r0, int64_t j0, int64_t bc, bool masked) {
    if constexpr (R < kRowBlockRows) {
      if (rows > R) return attend_rows_dispatch<R + 1>(rows, hh, r0, j0, bc, masked);
    }
    attend_rows<R>(hh, r0, j0, bc, masked);
  }

  // The row-major counterpart of attend, for R query rows from row r0: scores [R, keys], mask,
  // online softmax, values, with head_dim or keys along the lanes.
  template <int R>
  void attend_rows(int64_t hh, int64_t r0, int64_t j0, int64_t bc, bool masked) {
    constexpr int64_t kStep = attention_blocks::kValueChunks * kWideLanes;
    const int64_t d = p_.head_dim;
    const int64_t lds = key_rows_;
    float* st = st_;
    if (bf16_pairs_) {
      score_pairs<R>(q2(hh) + r0 * (d / 2), kt2(hh), ceil_div(bc, kWideLanes), st, lds);
    } else {
      score_keys<R>(qt(hh) + r0 * d, kt_tile(hh), ceil_div(bc, kWideLanes), st, lds);
    }
    mask_rows<R>(r0, j0, bc, lds, masked);
    if (p_.skip_softmax) {
      if (skip_rows<R>(hh, r0, bc, lds)) return;
      need_values(j0, bc);
    }
    float alpha[R];
    softmax_rows<R>(hh, r0, bc, lds, alpha);
    if (bf16_pairs_) return value_pairs<R>(hh, r0, bc, alpha);
    const float* values = v_tile(hh);
    float* o = ot(hh) + r0 * d;
    int64_t i = 0;
    for (; i + kStep <= d; i += kStep) {
      attention_blocks::value_rows<R, attention_blocks::kValueChunks>(st, lds, values + i, ld_packed_,
                                                                      bc, alpha, o + i, d);
    }
    for (; i < d; i += kWideLanes) {
      attention_blocks::value_rows<R, 1>(st, lds, values + i, ld_packed_, bc, alpha, o + i, d);
    }
  }

  // Scores st [R, lds] of R rows against `vectors` wide vectors of keys of the transposed tile kt.
  template <int R>
  void score_keys(const float* q, const float* kt, int64_t vectors, float* st, int64_t lds) {
    // R x kMaxVectors accumulators, kMaxVectors key vectors and a broadcast fit the registers.
    constexpr int kMaxVectors = simd::kVectorRegisters == 32 ? 4 : 2;
    const int64_t d = p_.head_dim;
    for_each_key_block<kMaxVectors>(vectors, [&]<int NK>(int64_t c) {
      attention_blocks::score_keys<R, NK>(q, d, kt + c, key_rows_, st + c, lds);
    });
  }

  // score_keys from the bf16 pairs.
  template <int R>
  void score_pairs(const uint32_t* q, const uint32_t* kt, int64_t vectors, float* st, int64_t lds) {
#if defined(__AVX512BF16__)
    const int64_t words = p_.head_dim / 2;
    for_each_key_block<4>(vectors, [&]<int NK>(int64_t c) {
      attention_blocks::score_keys_bf16<R, NK>(q, words, kt + c, key_rows_, st + c, lds);
    });
#else
    (void)q, (void)kt, (void)vectors, (void)st, (void)lds;
#endif
  }

  // The values of attend_rows from the bf16 pairs: the R rows' probabilities (st, zero past bc up to
  // whole vectors) rounded into p2_, then multiplied into their outputs a key pair at a time.
  template <int R>
  void value_pairs(int64_t hh, int64_t r0, int64_t bc, const float* alpha) {
#if defined(__AVX512BF16__)
    constexpr int64_t kStep = attention_blocks::kValueChunks * kWideLanes;
    const int64_t d = p_.head_dim;
    const int64_t ldp = key_rows_ / 2;
    const int64_t bc_pad = ceil_div(bc, kLanes) * kLanes;
    for (int r = 0; r < R; ++r) attention_blocks::round_to_bf16(st_ + r * key_rows_, bc_pad, p2_ + r * ldp);
    const int64_t pairs = ceil_div(bc, 2);
    const uint32_t* values = v2(hh);
    float* o = ot(hh) + r0 * d;
    int64_t i = 0;
    for (; i + kStep <= d; i += kStep) {
      attention_blocks::value_rows_bf16<R, attention_blocks::kValueChunks>(p2_, ldp, values + i, ld_packed_, pairs,
                                                                           alpha, o + i, d);
    }
    for (; i < d; i += kWideLanes) {
      attention_blocks::value_rows_bf16<R, 1>(p2_, ldp, values + i, ld_packed_, pairs, alpha, o + i, d);
    }
#else
    (void)hh, (void)r0, (void)bc, (void)alpha;
#endif
  }

  // Row-major scores st [R, lds] of rows r0 + r: -inf for keys past bc (the padding of the last
  // vector) and, when masked, for keys j0 + c that row r0 + r must not see.
  template <int R>
  void mask_rows(int64_t r0, int64_t j0, int64_t bc, int64_t lds, bool masked) {
    const AttentionMask& mask = p_.mask;
    const int64_t bc_pad = ceil_div(bc, kLanes) * kLanes;
    const Vec lanes = simd::lane_index();
    for (int r = 0; r < R; ++r) {
      float* s = st_ + r * lds;
      for (int64_t c = bc; c < bc_pad; ++c) s[c] = kNegInf;
      if (!masked) continue;
      const int64_t pos = row_pos_[r0 + r];
      const Vec last_causal = simd::splat(
          static_cast<float>(mask.causal ? std::clamp<int64_t>(pos - j0, -1, bc) : bc));
      const Vec before_window = simd::splat(static_cast<float>(
          mask.window.bounded() ? std::clamp<int64_t>(pos - mask.window.window - j0, -1, bc) : -1));
      const Vec sink = simd::splat(
          static_cast<float>(std::clamp<int64_t>(mask.window.sink - j0, 0, bc)));
      for (int64_t c = 0; c < bc; c += kLanes) {
        const Vec key = lanes + static_cast<float>(c);
        const auto visible = (key <= last_causal) & ((key < sink) | (key > before_window));
        simd::store(s + c, visible ? simd::load(s + c) : simd::splat(kNegInf));
      }
    }
  }

  // Skip Softmax's vote of the R rows over row-major scores st [R, lds]: true (and counted) when
  // every row that sees a key of the tile has tile max - running max < log2(lambda).
  template <int R>
  bool skip_rows(int64_t hh, int64_t r0, int64_t bc, int64_t lds) {
    const int64_t bc_pad = ceil_div(bc, kLanes) * kLanes;
    float tile_max[R];
    for (int r = 0; r < R; ++r) {
      const float* s = st_ + r * lds;
      Vec m = simd::splat(kNegInf);
      for (int64_t c = 0; c < bc_pad; c += kLanes) m = simd::max(m, simd::load(s + c));
      tile_max[r] = simd::reduce_max(m);
    }
    return vote(tile_max, max_run(hh) + r0, R);
  }

  // The vote itself over rows' tile maxima and running maxima (base 2). A row that sees no key of
  // the tile votes skip; a row whose running max is still -inf (its first visible tile) never does.
  bool vote(const float* tile_max, const float* run_max, int64_t rows) {
    bool seen = false;
    bool skip = true;
    for (int64_t r = 0; r < rows; ++r) {
      if (tile_max[r] == kNegInf) continue;
      seen = true;
      skip = skip && tile_max[r] - run_max[r] < p_.log2_lambda;
    }
    if (!seen) return false;
    ++tiles_.visited;
    if (skip) ++tiles_.skipped;
    return skip;
  }

  // softmax_update for row-major scores st [R, lds] (keys along the lanes); alpha [R].
  template <int R>
  void softmax_rows(int64_t hh, int64_t r0, int64_t bc, int64_t lds, float* alpha) {
    const int64_t bc_pad = ceil_div(bc, kLanes) * kLanes;
    float* max_run_rows = max_run(hh) + r0;
    float* sum_run_rows = sum_run(hh) + r0;
    for (int r = 0; r < R; ++r) {
      float* s = st_ + r * lds;
      Vec tile_max = simd::splat(kNegInf);
      for (int64_t c = 0; c < bc_pad; c += kLanes) tile_max = simd::max(tile_max, simd::load(s + c));
      const float old_max = max_run_rows[r];
      const float new_max = std::max(old_max, simd::reduce_max(tile_max));
      const float shift = new_max == kNegInf ? 0.f : new_max;
      alpha[r] = std::exp2(old_max - shift);
      Vec sum = {};
      for (int64_t c = 0; c < bc_pad; c += kLanes) {
        const Vec prob = simd::exp2(simd::load(s + c) - shift);
        simd::store(s + c, prob);
        sum += prob;
      }
      sum_run_rows[r] = sum_run_rows[r] * alpha[r] + simd::reduce_add(sum);
      max_run_rows[r] = new_max;
    }
  }

  // Picks the template instance for nv row vectors (1 .. kMaxRowVectors).
  template <int NV = 1>
  void attend_dispatch(int64_t nv, int64_t hh, int64_t col, int64_t j0, int64_t bc, bool masked) {
    if constexpr (NV < kMaxRowVectors) {
      if (nv > NV) return attend_dispatch<NV + 1>(nv, hh, col, j0, bc, masked);
    }
    attend<NV>(hh, col, j0, bc, masked);
  }

  // Rows [col, col + NV * kLanes) of kv head h_begin + hh against keys [j0, j0 + bc): scores,
  // mask, online softmax, values.
  template <int NV>
  void attend(int64_t hh, int64_t col, int64_t j0, int64_t bc, bool masked) {
    constexpr int64_t kLds = NV * kLanes;
    const int64_t d = p_.head_dim;
    float* st = st_;
    const float* keys = k_tile(hh);
    const float* q_t = qt(hh) + col;
    for_each_block<NV>(bc, [&]<int MR>(int64_t c) {
      attention_blocks::score_block<MR, NV>(keys + c * ld_packed_, ld_packed_, q_t, row_pad_, d,
                                            st + c * kLds, kLds);
    });
    if (masked) mask_scores<NV>(col, j0, bc);
    if (p_.skip_softmax) {
      if (skip_block<NV>(hh, col, bc)) return;
      need_values(j0, bc);
    }
    Vec alpha[NV];
    softmax_update<NV>(max_run(hh) + col, sum_run(hh) + col, bc, alpha);
    const float* values = v_tile(hh);
    float* o_t = ot(hh) + col;
    for_each_block<NV>(d, [&]<int MR>(int64_t i) {
      attention_blocks::value_block<MR, NV>(values + i, ld_packed_, st, kLds, bc, alpha,
                                            o_t + i * row_pad_, row_pad_);
    });
  }

  // Skip Softmax's vote of rows [col, col + NV * kLanes) (those below rows_) over the transposed
  // scores st [bc, NV * kLanes].
  template <int NV>
  bool skip_block(int64_t hh, int64_t col, int64_t bc) {
    float tile_max[NV * kLanes];
    const float* st = st_;
    for (int r = 0; r < NV; ++r) {
      Vec m = simd::splat(kNegInf);
      for (int64_t c = 0; c < bc; ++c) m = simd::max(m, simd::load(st + (c * NV + r) * kLanes));
      simd::store(tile_max + r * kLanes, m);
    }
    return vote(tile_max, max_run(hh) + col, std::min<int64_t>(NV * kLanes, rows_ - col));
  }

  // st[c, r] = -inf where row col + r must not see key j0 + c.
  template <int NV>
  void mask_scores(int64_t col, int64_t j0, int64_t bc) {
    const AttentionMask& mask = p_.mask;
    // Per row, in key offsets relative to j0 (clamped to [-1, bc], exact in float): the last key
    // the causal mask allows, and the last key before the window.
    Vec last_causal[NV];
    Vec before_window[NV];
    for (int r = 0; r < NV; ++r) {
      for (int lane = 0; lane < kLanes; ++lane) {
        const int64_t pos = row_pos_[col + r * kLanes + lane];
        const int64_t hi = mask.causal ? pos - j0 : bc;
        const int64_t lo = mask.window.bounded() ? pos - mask.window.window - j0 : -1;
        last_causal[r][lane] = static_cast<float>(std::clamp<int64_t>(hi, -1, bc));
        before_window[r][lane] = static_cast<float>(std::clamp<int64_t>(lo, -1, bc));
      }
    }
    const Vec sink = simd::splat(
        static_cast<float>(std::clamp<int64_t>(mask.window.sink - j0, 0, bc)));
    float* st = st_;
    for (int64_t c = 0; c < bc; ++c) {
      const Vec key = simd::splat(static_cast<float>(c));
      for (int r = 0; r < NV; ++r) {
        float* s = st + (c * NV + r) * kLanes;
        const auto visible = (key <= last_causal[r]) & ((key < sink) | (key > before_window[r]));
        simd::store(s, visible ? simd::load(s) : simd::splat(kNegInf));
      }
    }
  }

  // Online softmax over one key tile, in base 2: new running max, st <- 2^(st - max),
  // running sum rescaled; alpha = 2^(old max - new max) is the factor for the output accumulator.
  template <int NV>
  void softmax_update(float* max_run, float* sum_run, int64_t bc, Vec* alpha) {
    float* st = st_;
    for (int r = 0; r < NV; ++r) {
      const Vec old_max = simd::load(max_run + r * kLanes);
      Vec new_max = old_max;
      for (int64_t c = 0; c < bc; ++c) {
        new_max = simd::max(new_max, simd::load(st + (c * NV + r) * kLanes));
      }
      // Rows that have seen no key yet keep max -inf; subtracting 0 instead keeps 2^(-inf) = 0.
      const Vec shift = new_max == kNegInf ? simd::splat(0.f) : new_max;
      alpha[r] = simd::exp2(old_max - shift);
      Vec sum = {};
      for (int64_t c = 0; c < bc; ++c) {
        float* s = st + (c * NV + r) * kLanes;
        const Vec prob = simd::exp2(simd::load(s) - shift);
        simd::store(s, prob);
        sum += prob;
      }
      simd::store(sum_run + r * kLanes, simd::load(sum_run + r * kLanes) * alpha[r] + sum);
      simd::store(max_run + r * kLanes, new_max);
    }
  }

  // out = ot^T (or ot, row-major) / sum, lse = ln 2 * (max + log2 sum); rows that saw no key get 0 and -inf.
  void store_output(int64_t hh, int64_t t_begin, float* out, float* lse) {
    const int64_t d = p_.head_dim;
    const float* o_t = ot(hh);
    for (int64_t r = 0; r < rows_; ++r) {
      const int64_t t = t_begin + r / p_.group;
      const int64_t h = (h_begin_ + hh) * p_.group + r % p_.group;
      float* dst = out + (t * p_.n_heads + h) * d;
      const float sum = sum_run(hh)[r];
      if (sum == 0.f) {
        std::fill(dst, dst + d, 0.f);
        lse[t * p_.n_heads + h] = kNegInf;
        continue;
      }
      const float inv_sum = 1.f / sum;
      if (row_major_) {
        for (int64_t i = 0; i < d; ++i) dst[i] = o_t[r * d + i] * inv_sum;
      } else {
        for (int64_t i = 0; i < d; ++i) dst[i] = o_t[i * row_pad_ + r] * inv_sum;
      }
      lse[t * p_.n_heads + h] = kLn2 * (max_run(hh)[r] + std::log2(sum));
    }
  }

  const Problem& p_;
  SkipSoftmaxTiles tiles_;
  int64_t h_begin_ = 0;
  int64_t heads_ = 0;
  int64_t rows_ = 0;
  int64_t row_vectors_ = 0;
  int64_t row_pad_ = 0;
  bool row_major_ = false;      // few rows: row blocks, qt and ot row-major [rows, d]
  bool bf16_pairs_ = false;     // row blocks on a bf16 cache multiply bf16 pairs (kBf16Pairs)
  bool values_packed_ = false;  // v_tile_ holds the current key tile's values
  int64_t state_stride_ = 0;  // floats of qt / ot per kv head
  int64_t row_stride_ = 0;    // floats of max_run / sum_run per kv head
  int64_t ld_packed_ = 0;     // row stride of the packed key and value tiles
  int64_t key_rows_ = 0;      // rows of a packed tile: key_tile rounded up to whole wide vectors
  float* qt_ = nullptr;       // [heads, d, row_pad] queries * scale * log2(e), transposed
  float* ot_ = nullptr;       // [heads, d, row_pad] unnormalised outputs, transposed
  float* max_run_ = nullptr;  // [heads, row_pad] running max of base-2 scores
  float* sum_run_ = nullptr;  // [heads, row_pad] running sum of 2^(score - max)
  int64_t* row_pos_ = nullptr;  // [row_pad] causal_offset + query index of each row
  float* st_ = nullptr;       // [key_tile, NV * kLanes] scores, then probabilities
  float* k_tile_ = nullptr;   // [heads, key_tile, ld_packed] keys of the current tile
  float* v_tile_ = nullptr;   // [heads, key_tile, ld_packed] values of the current tile
  float* kt_tile_ = nullptr;  // row blocks: [heads, d, key_rows] keys of the current tile transposed
  float* key_block_ = nullptr;  // row blocks: [heads, kWideLanes, d] keys on their way to kt_tile_
  // bf16 pairs, two elements a word:
  uint32_t* q2_ = nullptr;          // [heads, row_pad, d / 2] scaled queries
  uint32_t* kt2_ = nullptr;         // [heads, d / 2, key_rows] keys on their side
  uint32_t* v2_ = nullptr;          // [heads, key_rows / 2, ld_packed] values of key pairs
  uint32_t* p2_ = nullptr;          // [kRowBlockRows, key_rows / 2] probabilities of key pairs
  uint32_t* key_block2_ = nullptr;  // [heads, kWideLanes, d / 2] a last partial block of keys
};

// The tiling, plus what only the kernel needs: kv heads per task and the number of key splits.
struct Cut {
  AttentionTiling tiling;
  int64_t heads_per_task = 1;
  int64_t n_splits = 1;
};

Cut cut_problem(int64_t nq, int64_t nk, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int threads) {
  Cut cut;
  AttentionTiling& t = cut.tiling;
  const int64_t group = n_heads / n_kv_heads;
  t.key_tile = kKeyTile;
  t.vote_rows = kMaxRowVectors * kLanes;
  t.tile_tokens = std::min(nq, std::max<int64_t>(1, kQueryTileRows / group));
  const int64_t n_tiles = ceil_div(nq, t.tile_tokens);
  // Short queries (decoding, Phase 2) are bound by reading K and V once: a task then takes every kv
  // head, so it streams whole cache rows, and threads split the keys instead; the pieces are merged
  // with merge_partials.
  if (n_tiles < std::max(threads, 2)) {
    cut.heads_per_task = n_kv_heads;
    const int64_t row_bytes = 2 * n_kv_heads * packed_row_floats(head_dim) * int64_t{sizeof(float)};
    t.key_tile = std::clamp(kPackedTileBytes / row_bytes / kMinKeyTile * kMinKeyTile, kMinKeyTile, kKeyTile);
    if (threads > 1) {
      cut.n_splits = std::clamp<int64_t>(ceil_div(2 * threads, n_tiles), 1,
                                         std::max<int64_t>(1, nk / (8 * t.key_tile)));
    }
  }
  t.split_keys = ceil_div(ceil_div(std::max<int64_t>(nk, 1), cut.n_splits), t.key_tile) * t.key_tile;
  return cut;
}

}  // namespace

AttentionTiling attention_tiling(int64_t nq, int64_t nk, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                                 int threads) {
  return cut_problem(nq, nk, n_heads, n_kv_heads, head_dim, threads).tiling;
}

namespace {

// Runs p's tasks (query tiles x kv head groups x key splits of `cut`) and merges the key splits.
void run_tasks(const Problem& p, const Cut& cut, float* out, float* lse, const SkipSoftmax& skip) {
  const bool clocked = attention_kernel_clock_on();
  const auto start = clocked ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const int threads = omp_get_max_threads();
  const int64_t nq = p.nq, nk = p.nk, n_heads = p.n_heads, n_kv_heads = p.n_kv_heads, head_dim = p.head_dim;
  const int64_t n_tiles = ceil_div(nq, p.tile_tokens);
  const int64_t n_splits = cut.n_splits;
  const int64_t head_tasks = ceil_div(n_kv_heads, p.heads_per_task);
  const int64_t split_keys = cut.tiling.split_keys;
  std::vector<float> part_out;
  std::vector<float> part_lse;
  if (n_splits > 1) {
    part_out.resize(static_cast<size_t>(n_splits * nq * n_heads * head_dim));
    part_lse.resize(static_cast<size_t>(n_splits * nq * n_heads));
  }

  const int64_t n_tasks = n_tiles * head_tasks * n_splits;
  const bool use_threads = threads > 1 && n_tasks > 1 && nq * nk * n_heads * head_dim >= (1 << 15);
  int64_t visited = 0;
  int64_t skipped = 0;
#pragma omp parallel if (use_threads) reduction(+ : visited, skipped)
  {
    TileWorker worker(p);
    // Later query tiles see more keys under a causal mask: hand them out first.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < n_tasks; ++task) {
      const int64_t tile = n_tiles - 1 - task / (head_tasks * n_splits);
      const int64_t h_begin = task / n_splits % head_tasks * p.heads_per_task;
      const int64_t split = task % n_splits;
      const int64_t t_begin = tile * p.tile_tokens;
      const int64_t t_end = std::min(nq, t_begin + p.tile_tokens);
      const int64_t key_begin = std::min(nk, split * split_keys);
      const int64_t key_end = std::min(nk, key_begin + split_keys);
      if (n_splits == 1) {
        worker.run(h_begin, t_begin, t_end, key_begin, key_end, out, lse);
      } else {
        worker.run(h_begin, t_begin, t_end, key_begin, key_end,
                   part_out.data() + split * nq * n_heads * head_dim,
                   part_lse.data() + split * nq * n_heads);
      }
    }
    visited += worker.tiles().visited;
    skipped += worker.tiles().skipped;
  }
  if (skip.tiles != nullptr) *skip.tiles += SkipSoftmaxTiles{visited, skipped};
  if (n_splits > 1) {
    merge_partials(part_out.data(), part_lse.data(), n_splits, nq, n_heads, head_dim, out, lse);
  }
  if (clocked) {
    // Booked by one query's rows: a call for many decoding sequences is a decode call.
    book_attention_kernel_call(p.segment_tokens, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                               {visited, skipped});
  }
}

}  // namespace

void attention_forward(const float* q, int64_t nq, KvRows k, KvRows v, int64_t nk, int64_t n_heads,
                       int64_t n_kv_heads, int64_t head_dim, float scale, const AttentionMask& mask,
                       float* out, float* lse, const SkipSoftmax& skip) {
  assert(n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0 && head_dim > 0);
  assert(k.dtype == v.dtype && check_kv_dtype(k.dtype, head_dim).ok());
  if (nq <= 0) return;
  const Cut cut = cut_problem(nq, nk, n_heads, n_kv_heads, head_dim, omp_get_max_threads());
  // lambda = S / L for the L keys of this call; at lambda >= 1 kernels disagree and accuracy suffers.
  const double lambda = nk > 0 ? skip.scale_factor / static_cast<double>(nk) : 0.0;
  const bool skip_on = lambda > 0.0 && lambda < 1.0;
  const Problem p{q, k, v, nq, nk, n_heads, n_kv_heads, head_dim, n_heads / n_kv_heads,
                  scale * kLog2e, mask, cut.tiling.tile_tokens, nq, cut.heads_per_task, cut.tiling.key_tile,
                  skip_on, skip_on ? static_cast<float>(std::log2(lambda)) : 0.f};
  run_tasks(p, cut, out, lse, skip);
}

bool attention_shares_key_tiles(int64_t nq, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, KvDType dtype) {
  const int64_t rows = nq * (n_heads / n_kv_heads);
  if (rows <= kMaxDecodeRows && head_dim % kWideLanes == 0) return true;
  // One query tile (cut_problem), so that every query is cut as it would be alone.
  return rows <= kQueryTileRows && attention_rounds_to_bf16(nq, n_heads, n_kv_heads, head_dim, dtype, false);
}

bool attention_rounds_to_bf16(int64_t nq, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, KvDType dtype,
                              bool skip_softmax) {
  // Skip Softmax votes by row block only where a query's rows fit one (decoding); longer queries
  // vote by the column blocks' groups of rows (attention_tiling), so they stay float32.
  const bool votes_by_row_block = !skip_softmax || nq * (n_heads / n_kv_heads) <= kMaxDecodeRows;
  return attention_blocks::kBf16Pairs && dtype == KvDType::kBF16 && head_dim % 32 == 0 && votes_by_row_block;
}

void attention_forward_shared_keys(const float* q, int64_t queries, int64_t nq, KvRows k, KvRows v, int64_t nk,
                                   int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale, float* out,
                                   float* lse) {
  assert(n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0 && head_dim > 0);
  assert(k.dtype == v.dtype && check_kv_dtype(k.dtype, head_dim).ok());
  if (queries <= 0 || nq <= 0) return;
  const int64_t group = n_heads / n_kv_heads;
  if (queries == 1 || !attention_shares_key_tiles(nq, n_heads, n_kv_heads, head_dim, k.dtype)) {
    const int64_t floats = nq * n_heads * head_dim;
    for (int64_t i = 0; i < queries; ++i) {
      attention_forward(q + i * floats, nq, k, v, nk, n_heads, n_kv_heads, head_dim, scale, {}, out + i * floats,
                        lse + i * nq * n_heads);
    }
    return;
  }
  // Each query is cut as it would be alone, so its rows take the same key tiles and splits: a query
  // this short is one query tile, so one task of every kv head (row-major), per key split.
  Cut cut = cut_problem(nq, nk, n_heads, n_kv_heads, head_dim, omp_get_max_threads());
  assert(cut.tiling.tile_tokens == nq && cut.heads_per_task == n_kv_heads);
  cut.tiling.tile_tokens = queries * nq;
  const Problem p{q, k, v, queries * nq, nk, n_heads, n_kv_heads, head_dim, group,
                  scale * kLog2e, {}, cut.tiling.tile_tokens, nq, cut.heads_per_task, cut.tiling.key_tile,
                  false, 0.f};
  run_tasks(p, cut, out, lse, {});
}

}  // namespace star::cpu
