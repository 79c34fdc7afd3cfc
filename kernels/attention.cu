#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "reduce.cuh"
#include "star/backend/cuda/attention.h"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/merge.h"

namespace star::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;  // (query token, query head) rows
constexpr int kKeyTile = 32;                           // one key per lane while scoring
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMinKeysPerSplit = 256;
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// Everything a block needs besides K and V (whose type is the template parameter).
struct Problem {
  const float* q;
  int64_t nq, nk, n_heads, n_kv_heads, head_dim, group;
  float scale;
  bool causal;
  int64_t causal_offset;
  int64_t sink, window;  // window 0: unbounded
  int64_t keys_per_split;
  float* out;  // key split z writes out + z * out_split_stride, lse + z * lse_split_stride
  float* lse;
  int64_t out_split_stride, lse_split_stride;
  // Skip Softmax: on when 0 < lambda < 1; tiles, when set, counts [visited, skipped] on the device.
  bool skip_softmax;
  float ln_lambda;
  unsigned long long* tiles;
};

__device__ inline float as_float(float x) { return x; }
__device__ inline float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// The AttentionMask rule: causal hides keys after the query's position; a bounded window also
// hides keys in [sink, pos - window].
__device__ inline bool sees(const Problem& p, int64_t pos, int64_t key) {
  if (p.causal && key > pos) return false;
  if (p.window > 0 && !(key < p.sink || key > pos - p.window)) return false;
  return true;
}

size_t shared_bytes(int64_t head_dim) {
  // q [rows, d] | k [keys, d + 1] (the pad spreads lane j's row j over the banks) | v [keys, d]
  return sizeof(float) *
         static_cast<size_t>(kRowsPerBlock * head_dim + kKeyTile * (head_dim + 1) + kKeyTile * head_dim);
}

// Block (x, y, z): rows [16x, 16x + 16) of kv head y (row r = token * group + head in group)
// against keys [z * keys_per_split, ...). Warp w owns rows 4w..4w+3 and keeps their running max
// m, sum l and output acc (lane holds dimensions lane, lane + 32, ...) in registers.
template <typename KV, int kChunks>
__global__ void __launch_bounds__(kThreads)
    attention_kernel(Problem p, const KV* __restrict__ k, const KV* __restrict__ v) {
  extern __shared__ float smem[];
  const int64_t d = p.head_dim;
  float* q_s = smem;
  float* k_s = q_s + kRowsPerBlock * d;
  float* v_s = k_s + kKeyTile * (d + 1);

  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t rows = p.nq * p.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock;
  const int64_t kvh = blockIdx.y;
  const int64_t split = blockIdx.z;

  for (int64_t idx = threadIdx.x; idx < kRowsPerBlock * d; idx += kThreads) {
    const int64_t row = row0 + idx / d;
    float value = 0.f;
    if (row < rows) {
      const int64_t t = row / p.group;
      const int64_t h = kvh * p.group + row % p.group;
      value = p.q[(t * p.n_heads + h) * d + idx % d] * p.scale;
    }
    q_s[idx] = value;
  }

  const int64_t last_row = min(row0 + kRowsPerBlock, rows) - 1;
  const int64_t pos_first = p.causal_offset + row0 / p.group;
  const int64_t pos_last = p.causal_offset + last_row / p.group;
  const int64_t key_begin = split * p.keys_per_split;
  int64_t key_end = min(p.nk, key_begin + p.keys_per_split);
  if (p.causal) key_end = min(key_end, pos_last + 1);

  bool valid[kRowsPerWarp];
  int64_t pos[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t row = row0 + warp * kRowsPerWarp + r;
    valid[r] = row < rows;
    pos[r] = p.causal_offset + row / p.group;
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[r][c] = 0.f;
  }

  for (int64_t j0 = key_begin; j0 < key_end; j0 += kKeyTile) {
    const int64_t j_last = min(j0 + kKeyTile, key_end) - 1;
    // A tile inside every row's window gap ([sink, pos - window]) holds nothing to see.
    if (p.window > 0 && j0 >= p.sink && j_last <= pos_first - p.window) continue;
    __syncthreads();  // every warp is done with the previous tile
    // With Skip Softmax the values wait for the vote, so a skipped tile never reads V.
    for (int64_t idx = threadIdx.x; idx < kKeyTile * d; idx += kThreads) {
      const int64_t j = idx / d;
      const int64_t i = idx % d;
      float key_value = 0.f, value_value = 0.f;
      if (j0 + j <= j_last) {
        const int64_t offset = ((j0 + j) * p.n_kv_heads + kvh) * d + i;
        key_value = as_float(k[offset]);
        if (!p.skip_softmax) value_value = as_float(v[offset]);
      }
      k_s[j * (d + 1) + i] = key_value;
      if (!p.skip_softmax) v_s[j * d + i] = value_value;
    }
    __syncthreads();

    // Scores of this lane's key against the warp's rows.
    const int64_t key = j0 + lane;
    const float* k_row = k_s + lane * (d + 1);
    const float* q_rows = q_s + warp * kRowsPerWarp * d;
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.f;
#pragma unroll 4
    for (int64_t i = 0; i < d; ++i) {
      const float kk = k_row[i];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) s[r] += q_rows[r * d + i] * kk;
    }

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (!valid[r] || key > j_last || !sees(p, pos[r], key)) s[r] = -INFINITY;
    }

    if (p.skip_softmax) {
      // The block's 16 rows vote together: skip when every row that sees a key of the tile has
      // tile max - running max < ln(lambda); a row with running max -inf (its first tile) never does.
      bool warp_seen = false;
      bool warp_skip = true;
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float tile_max = warp_max(s[r]);
        if (tile_max == -INFINITY) continue;
        warp_seen = true;
        warp_skip = warp_skip && tile_max - m[r] < p.ln_lambda;
      }
      const bool seen = __syncthreads_or(warp_seen) != 0;
      const bool skip = __syncthreads_and(warp_skip) != 0;
      if (seen) {
        if (threadIdx.x == 0 && p.tiles != nullptr) {
          atomicAdd(&p.tiles[0], 1ULL);
          if (skip) atomicAdd(&p.tiles[1], 1ULL);
        }
        if (skip) continue;
      }
      for (int64_t idx = threadIdx.x; idx < kKeyTile * d; idx += kThreads) {
        const int64_t j = idx / d;
        v_s[idx] = j0 + j <= j_last ? as_float(v[((j0 + j) * p.n_kv_heads + kvh) * d + idx % d]) : 0.f;
      }
      __syncthreads();
    }

    // Online softmax: s becomes this tile's probabilities relative to the new running max.
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float m_new = fmaxf(m[r], warp_max(s[r]));
      const float prob = s[r] == -INFINITY ? 0.f : expf(s[r] - m_new);
      const float alpha = m_new == -INFINITY ? 1.f : expf(m[r] - m_new);
      l[r] = l[r] * alpha + warp_sum(prob);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) acc[r][c] *= alpha;
      s[r] = prob;
    }

    // acc += P · V, key by key; each key's probabilities come from the lane that scored it.
    for (int j = 0; j < kKeyTile; ++j) {
      float pj[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) pj[r] = __shfl_sync(kFullWarp, s[r], j);
      const float* v_row = v_s + j * d;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int64_t i = c * 32 + lane;
        if (i < d) {
          const float vv = v_row[i];
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) acc[r][c] += pj[r] * vv;
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (!valid[r]) continue;
    const int64_t row = row0 + warp * kRowsPerWarp + r;
    const int64_t t = row / p.group;
    const int64_t h = kvh * p.group + row % p.group;
    float* o = p.out + split * p.out_split_stride + (t * p.n_heads + h) * d;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t i = c * 32 + lane;
      if (i < d) o[i] = l[r] > 0.f ? acc[r][c] / l[r] : 0.f;
    }
    if (lane == 0) {
      p.lse[split * p.lse_split_stride + t * p.n_heads + h] =
          l[r] > 0.f ? m[r] + logf(l[r]) : -INFINITY;
    }
  }
}

template <typename KV, int kChunks>
Status launch_chunks(const Problem& p, const KV* k, const KV* v, dim3 grid, cudaStream_t stream) {
  const size_t bytes = shared_bytes(p.head_dim);
  if (bytes > kDefaultSharedBytes) {
    if (Status s = cuda_status(cudaFuncSetAttribute(attention_kernel<KV, kChunks>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(bytes)),
                               "attention: raising the shared-memory limit");
        !s.ok()) {
      return s;
    }
  }
  attention_kernel<KV, kChunks><<<grid, kThreads, bytes, stream>>>(p, k, v);
  return launch_status("attention_kernel");
}

template <typename KV>
Status launch_kernel(const Problem& p, const KV* k, const KV* v, dim3 grid, cudaStream_t stream) {
  if (p.head_dim <= 32) return launch_chunks<KV, 1>(p, k, v, grid, stream);
  if (p.head_dim <= 64) return launch_chunks<KV, 2>(p, k, v, grid, stream);
  if (p.head_dim <= 128) return launch_chunks<KV, 4>(p, k, v, grid, stream);
  return launch_chunks<KV, 8>(p, k, v, grid, stream);
}

// Key splits that fill about two blocks per multiprocessor, each at least kMinKeysPerSplit keys.
Result<int64_t> choose_splits(int64_t blocks, int64_t nk) {
  int device = 0;
  int multiprocessors = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s.ok()) return s;
  if (Status s = cuda_status(cudaDeviceGetAttribute(&multiprocessors,
                                                    cudaDevAttrMultiProcessorCount, device),
                             "cudaDeviceGetAttribute(multiprocessor count)");
      !s.ok()) {
    return s;
  }
  const int64_t wanted = 2 * static_cast<int64_t>(multiprocessors);
  if (blocks >= wanted || nk < 2 * kMinKeysPerSplit) return int64_t{1};
  return std::min((wanted + blocks - 1) / blocks, nk / kMinKeysPerSplit);
}

Status keep_freed_scratch() {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  if (Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s.ok()) return s;
  if (Status s = cuda_status(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
      !s.ok()) {
    return s;
  }
  uint64_t keep_everything = UINT64_MAX;
  return cuda_status(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything),
                     "cudaMemPoolSetAttribute(release threshold)");
}

template <typename KV>
Status attention_splits(Problem& p, const KV* k, const KV* v, dim3 grid, int64_t splits, cudaStream_t stream);

// Runs the kernel; with Skip Softmax counting, adds the device's tile counts to `tiles` (which waits
// for the stream).
template <typename KV>
Status attention_counted(Problem& p, const KV* k, const KV* v, dim3 grid, int64_t splits, SkipSoftmaxTiles* tiles,
                         cudaStream_t stream) {
  if (!p.skip_softmax || tiles == nullptr) return attention_splits(p, k, v, grid, splits, stream);
  void* counters = nullptr;
  if (Status s = cuda_status(cudaMallocAsync(&counters, 2 * sizeof(unsigned long long), stream),
                             "cudaMallocAsync(skip softmax counters)");
      !s.ok()) {
    return s;
  }
  p.tiles = static_cast<unsigned long long*>(counters);
  unsigned long long host[2] = {0, 0};
  const Status zeroed = cuda_status(cudaMemsetAsync(counters, 0, sizeof(host), stream), "cudaMemsetAsync(skip softmax counters)");
  const Status computed = zeroed.ok() ? attention_splits(p, k, v, grid, splits, stream) : zeroed;
  const Status copied =
      computed.ok() ? cuda_status(cudaMemcpyAsync(host, counters, sizeof(host), cudaMemcpyDeviceToHost, stream),
                                  "cudaMemcpyAsync(skip softmax counters)")
                    : computed;
  const Status freed = cuda_status(cudaFreeAsync(counters, stream), "cudaFreeAsync(skip softmax counters)");
  const Status synced =
      copied.ok() ? cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize(skip softmax counters)") : copied;
  if (!synced.ok()) return synced;
  if (!freed.ok()) return freed;
  *tiles += SkipSoftmaxTiles{static_cast<int64_t>(host[0]), static_cast<int64_t>(host[1])};
  return ok_status();
}

template <typename KV>
Status attention(const float* q, int64_t nq, const KV* k, const KV* v, int64_t nk, int64_t n_heads,
                 int64_t n_kv_heads, int64_t head_dim, float scale, const AttentionMask& mask,
                 float* out, float* lse, const SkipSoftmax& skip, cudaStream_t stream) {
  if (nq < 0 || nk < 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0) {
    return invalid_argument("attention_forward: need nq, nk >= 0 and Hq a multiple of Hkv > 0, got nq " +
                            std::to_string(nq) + ", nk " + std::to_string(nk) + ", Hq " +
                            std::to_string(n_heads) + ", Hkv " + std::to_string(n_kv_heads));
  }
  if (head_dim < 1 || head_dim > kMaxHeadDim) {
    return invalid_argument("attention_forward: head_dim " + std::to_string(head_dim) +
                            " outside [1, " + std::to_string(kMaxHeadDim) + "]");
  }
  if (n_kv_heads > 65535) {
    return invalid_argument("attention_forward: " + std::to_string(n_kv_heads) +
                            " kv heads exceed the grid's 65535");
  }
  if (nq == 0) return ok_status();

  const int64_t group = n_heads / n_kv_heads;
  const int64_t row_tiles = (nq * group + kRowsPerBlock - 1) / kRowsPerBlock;
  Result<int64_t> wanted_splits = choose_splits(row_tiles * n_kv_heads, nk);
  if (!wanted_splits.ok()) return wanted_splits.status();
  // Whole key tiles per split keep every split's loads aligned like the unsplit kernel's.
  const int64_t keys_per_split =
      *wanted_splits == 1
          ? nk
          : ((nk + *wanted_splits - 1) / *wanted_splits + kKeyTile - 1) / kKeyTile * kKeyTile;
  const int64_t splits = keys_per_split == 0 ? 1 : (nk + keys_per_split - 1) / keys_per_split;

  // lambda = S / L for the L keys of this call, as in the CPU kernel.
  const double lambda = nk > 0 ? skip.scale_factor / static_cast<double>(nk) : 0.0;
  const bool skip_on = lambda > 0.0 && lambda < 1.0;
  Problem p{q, nq, nk, n_heads, n_kv_heads, head_dim, group, scale, mask.causal,
            mask.causal_offset, mask.window.sink, mask.window.bounded() ? mask.window.window : 0,
            keys_per_split, out, lse, 0, 0, skip_on, skip_on ? static_cast<float>(std::log(lambda)) : 0.f, nullptr};
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(n_kv_heads),
                  static_cast<unsigned>(splits));
  return attention_counted(p, k, v, grid, splits, skip.tiles, stream);
}

template <typename KV>
Status attention_splits(Problem& p, const KV* k, const KV* v, dim3 grid, int64_t splits, cudaStream_t stream) {
  if (splits == 1) return launch_kernel(p, k, v, grid, stream);
  const int64_t nq = p.nq, n_heads = p.n_heads, head_dim = p.head_dim;
  float* out = p.out;
  float* lse = p.lse;

  // Each split writes its own (out, lse) into scratch from the stream-ordered pool; merge_partials
  // combines them. Decoding asks for this scratch every layer of every token, so the pool keeps
  // what is freed (by default it returns memory to the driver at each synchronization).
  if (Status s = keep_freed_scratch(); !s.ok()) return s;
  const int64_t out_floats = nq * n_heads * head_dim;
  const int64_t lse_floats = nq * n_heads;
  void* scratch = nullptr;
  if (Status s = cuda_status(cudaMallocAsync(&scratch, sizeof(float) * splits * (out_floats + lse_floats), stream),
                             "cudaMallocAsync(attention key splits)");
      !s.ok()) {
    return s;
  }
  float* split_out = static_cast<float*>(scratch);
  float* split_lse = split_out + splits * out_floats;
  p.out = split_out;
  p.lse = split_lse;
  p.out_split_stride = out_floats;
  p.lse_split_stride = lse_floats;
  const Status computed = launch_kernel(p, k, v, grid, stream);
  const Status merged =
      computed.ok() ? merge_partials(split_out, split_lse, splits, nq, n_heads, head_dim, out, lse, stream)
                    : computed;
  const Status freed = cuda_status(cudaFreeAsync(scratch, stream), "cudaFreeAsync(attention key splits)");
  return merged.ok() ? freed : merged;
}

}  // namespace

Status attention_forward(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                         int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float scale,
                         const AttentionMask& mask, float* out, float* lse, cudaStream_t stream,
                         const SkipSoftmax& skip) {
  return attention(q, nq, k, v, nk, n_heads, n_kv_heads, head_dim, scale, mask, out, lse, skip, stream);
}

Status attention_forward(const float* q, int64_t nq, const __nv_bfloat16* k,
                         const __nv_bfloat16* v, int64_t nk, int64_t n_heads, int64_t n_kv_heads,
                         int64_t head_dim, float scale, const AttentionMask& mask, float* out,
                         float* lse, cudaStream_t stream, const SkipSoftmax& skip) {
  return attention(q, nq, k, v, nk, n_heads, n_kv_heads, head_dim, scale, mask, out, lse, skip, stream);
}

}  // namespace star::cuda
