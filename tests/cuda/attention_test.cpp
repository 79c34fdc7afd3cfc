// attention_forward on the GPU against the CPU kernel (and the naive double-precision reference):
// masks, GQA, head sizes, key splits, empty rows and the bf16 KV path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/backend/cpu/attention.h"
#include "star/backend/cuda/attention.h"

namespace star {
namespace {

using testing::random_tensor;
using testing::to_device;
using testing::to_host;

using CudaAttention = testing::CudaTest;

struct Case {
  std::string name;
  int64_t nq, nk, hq, hkv, d;
  AttentionMask mask;
};

AttentionMask causal(int64_t offset, AttentionWindow window = {}) {
  AttentionMask m;
  m.causal = true;
  m.causal_offset = offset;
  m.window = window;
  return m;
}

struct Outputs {
  std::vector<float> out, lse;
};

Outputs cpu_attention(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                      const std::vector<float>& v) {
  Outputs r{std::vector<float>(static_cast<size_t>(c.nq * c.hq * c.d)),
            std::vector<float>(static_cast<size_t>(c.nq * c.hq))};
  cpu::attention_forward(q.data(), c.nq, k.data(), v.data(), c.nk, c.hq, c.hkv, c.d,
                         1.f / std::sqrt(static_cast<float>(c.d)), c.mask, r.out.data(), r.lse.data());
  return r;
}

template <typename KvBuffer>
Outputs gpu_attention(const Case& c, const std::vector<float>& q, const KvBuffer& k, const KvBuffer& v) {
  auto dq = to_device(q);
  auto out = testing::device_zeros<float>(static_cast<size_t>(c.nq * c.hq * c.d));
  auto lse = testing::device_zeros<float>(static_cast<size_t>(c.nq * c.hq));
  const Status s = cuda::attention_forward(dq.data(), c.nq, k.data(), v.data(), c.nk, c.hq, c.hkv, c.d,
                                           1.f / std::sqrt(static_cast<float>(c.d)), c.mask,
                                           out.data(), lse.data(), nullptr);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return {to_host(out), to_host(lse)};
}

void expect_same_attention(const Outputs& gpu, const Outputs& cpu, float tolerance) {
  ASSERT_EQ(gpu.lse.size(), cpu.lse.size());
  for (size_t i = 0; i < cpu.lse.size(); ++i) {
    if (std::isinf(cpu.lse[i])) {
      ASSERT_EQ(gpu.lse[i], cpu.lse[i]) << "row " << i << " sees no key";
    } else {
      ASSERT_NEAR(gpu.lse[i], cpu.lse[i], tolerance * std::max(1.f, std::abs(cpu.lse[i]))) << "lse row " << i;
    }
  }
  testing::expect_all_near(gpu.out, cpu.out, tolerance, tolerance, "out");
}

// Every shape the engine produces: prefill, chunked prefill after a cache, decoding over long
// shards (the key-split path), remote shards without a mask, StreamingLLM windows, tiny and large
// heads, GQA groups of 1 to 8.
std::vector<Case> cases() {
  return {
      {"prefill_gqa4", 37, 37, 8, 2, 64, causal(0)},
      {"chunk_after_cache", 5, 300, 4, 4, 128, causal(295)},
      {"decode_long_shard_split", 1, 5000, 32, 8, 128, causal(4999)},
      {"remote_shard_no_mask", 3, 2100, 16, 2, 128, AttentionMask{}},
      {"window_with_sink_split", 2, 4096, 8, 8, 64, causal(4094, AttentionWindow{4, 100})},
      {"window_prefill", 300, 300, 4, 1, 32, causal(0, AttentionWindow{3, 40})},
      {"tiny_heads_no_mask", 50, 80, 6, 3, 8, AttentionMask{}},
      {"head_dim_96", 9, 70, 2, 2, 96, causal(61)},
      {"head_dim_256_large_shared_memory", 20, 130, 4, 2, 256, causal(110)},
      {"rows_before_every_key", 6, 40, 4, 2, 16, causal(-3)},
  };
}

TEST_F(CudaAttention, MatchesCpuKernelOnFloat32KeysAndValues) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(static_cast<uint32_t>(c.nq * 7919 + c.nk));
    const auto q = random_tensor(static_cast<size_t>(c.nq * c.hq * c.d), rng, -2, 2);
    const auto k = random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng, -2, 2);
    const auto v = random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng);
    const Outputs expected = cpu_attention(c, q, k, v);
    expect_same_attention(gpu_attention(c, q, to_device(k), to_device(v)), expected, 2e-5f);
    // Independent check of the CPU kernel's reading of the mask on the same data.
    const auto ref = testing::reference_attention(q, c.nq, k, v, c.nk, c.hq, c.hkv, c.d,
                                                  1.f / std::sqrt(static_cast<float>(c.d)), c.mask);
    expect_same_attention({ref.out, ref.lse}, expected, 2e-5f);
  }
}

TEST_F(CudaAttention, Bf16KeysAndValuesMatchCpuOnTheRoundedValues) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(static_cast<uint32_t>(c.nk * 31 + c.d));
    const auto q = random_tensor(static_cast<size_t>(c.nq * c.hq * c.d), rng, -2, 2);
    const auto k = random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng, -2, 2);
    const auto v = random_tensor(static_cast<size_t>(c.nk * c.hkv * c.d), rng);
    const Outputs expected = cpu_attention(c, q, testing::rounded_to_bf16(k), testing::rounded_to_bf16(v));
    expect_same_attention(gpu_attention(c, q, testing::to_device_bf16(k), testing::to_device_bf16(v)),
                          expected, 2e-5f);
  }
}

TEST_F(CudaAttention, NoKeysGivesZeroOutputAndMinusInfinity) {
  const Case c{"empty", 4, 0, 4, 2, 32, AttentionMask{}};
  std::mt19937 rng(9);
  const auto q = random_tensor(static_cast<size_t>(c.nq * c.hq * c.d), rng);
  const Outputs gpu = gpu_attention(c, q, testing::device_zeros<float>(0), testing::device_zeros<float>(0));
  for (float x : gpu.out) EXPECT_EQ(x, 0.f);
  for (float x : gpu.lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
}

TEST(CudaAttentionArguments, UnsupportedShapesAreInvalidArguments) {
  const AttentionMask none;
  EXPECT_EQ(cuda::attention_forward(static_cast<const float*>(nullptr), 1, static_cast<const float*>(nullptr),
                                    nullptr, 1, 6, 4, 64, 1.f, none, nullptr, nullptr, nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // Hq not a multiple of Hkv
  EXPECT_EQ(cuda::attention_forward(static_cast<const float*>(nullptr), 1, static_cast<const float*>(nullptr),
                                    nullptr, 1, 4, 4, 512, 1.f, none, nullptr, nullptr, nullptr)
                .code(),
            StatusCode::kInvalidArgument);  // head_dim above 256
}

}  // namespace
}  // namespace star
