// RMSNorm, SwiGLU, embedding, bf16 conversion and RoPE on the GPU against the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cpu_kernels/attention_reference.h"
#include "cuda/cuda_test_support.h"
#include "star/backend/cpu/embedding.h"
#include "star/backend/cpu/rms_norm.h"
#include "star/backend/cpu/rope.h"
#include "star/backend/cpu/swiglu.h"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/embedding.h"
#include "star/backend/cuda/rms_norm.h"
#include "star/backend/cuda/rope.h"
#include "star/backend/cuda/swiglu.h"

namespace star {
namespace {

using testing::CudaTest;
using testing::random_tensor;
using testing::to_device;
using testing::to_host;

using CudaElementwise = CudaTest;

TEST_F(CudaElementwise, RmsNormMatchesCpu) {
  std::mt19937 rng(1);
  for (int64_t dim : {1, 64, 300, 4096}) {
    SCOPED_TRACE(dim);
    const int64_t n = 7;
    const auto x = random_tensor(static_cast<size_t>(n * dim), rng, -3, 3);
    const auto w = random_tensor(static_cast<size_t>(dim), rng, 0.5f, 1.5f);
    std::vector<float> expected(x.size());
    cpu::rms_norm(x.data(), n, dim, w.data(), 1e-5f, expected.data());

    auto dx = to_device(x);
    auto dw = to_device(w);
    auto dy = testing::device_zeros<float>(x.size());
    ASSERT_TRUE(cuda::rms_norm(dx.data(), n, dim, dw.data(), 1e-5f, dy.data(), nullptr).ok());
    testing::expect_all_near(to_host(dy), expected, 1e-6f, 1e-5f, "rms_norm");
    // In place (y aliases x), as the model's final norm does not but the contract allows.
    ASSERT_TRUE(cuda::rms_norm(dx.data(), n, dim, dw.data(), 1e-5f, dx.data(), nullptr).ok());
    testing::expect_all_near(to_host(dx), expected, 1e-6f, 1e-5f, "rms_norm in place");
  }
}

TEST_F(CudaElementwise, SwigluMatchesCpu) {
  std::mt19937 rng(2);
  const int64_t n = 100003;  // not a multiple of any block or vector width
  const auto gate = random_tensor(static_cast<size_t>(n), rng, -30, 30);
  const auto up = random_tensor(static_cast<size_t>(n), rng, -2, 2);
  std::vector<float> expected(gate.size());
  cpu::swiglu(gate.data(), up.data(), n, expected.data());

  auto dg = to_device(gate);
  auto du = to_device(up);
  auto out = testing::device_zeros<float>(gate.size());
  ASSERT_TRUE(cuda::swiglu(dg.data(), du.data(), n, out.data(), nullptr).ok());
  testing::expect_all_near(to_host(out), expected, 1e-6f, 1e-5f, "swiglu");
}

TEST_F(CudaElementwise, EmbeddingReadsBf16RowsExactly) {
  std::mt19937 rng(3);
  const int64_t vocab = 50, dim = 300;
  const auto table = random_tensor(static_cast<size_t>(vocab * dim), rng);
  const std::vector<int32_t> ids{0, 49, 7, 7, 23};
  // The CPU reference reads the same bf16 values widened to float32: the result is exact.
  const auto rounded = testing::rounded_to_bf16(table);
  std::vector<float> expected(ids.size() * static_cast<size_t>(dim));
  WeightTensor rounded_table;
  rounded_table.shape = {vocab, dim};
  rounded_table.data = reinterpret_cast<const std::byte*>(rounded.data());
  cpu::embedding_lookup(rounded_table, ids.data(), static_cast<int64_t>(ids.size()), expected.data());

  auto dtable = testing::to_device_bf16(table);
  auto dids = to_device(ids);
  auto out = testing::device_zeros<float>(expected.size());
  ASSERT_TRUE(cuda::embedding_lookup(dtable.data(), vocab, dim, dids.data(),
                                     static_cast<int64_t>(ids.size()), out.data(), nullptr)
                  .ok());
  EXPECT_EQ(to_host(out), expected);
}

TEST_F(CudaElementwise, EmbeddingOutOfRangeIdGivesZerosNotAFault) {
  const int64_t vocab = 4, dim = 8;
  auto dtable = testing::to_device_bf16(std::vector<float>(vocab * dim, 1.f));
  auto dids = to_device(std::vector<int32_t>{-1, 4, 2});
  auto out = testing::device_zeros<float>(3 * dim);
  ASSERT_TRUE(cuda::embedding_lookup(dtable.data(), vocab, dim, dids.data(), 3, out.data(), nullptr).ok());
  const auto host = to_host(out);
  for (int64_t i = 0; i < 2 * dim; ++i) EXPECT_EQ(host[static_cast<size_t>(i)], 0.f);
  for (int64_t i = 2 * dim; i < 3 * dim; ++i) EXPECT_EQ(host[static_cast<size_t>(i)], 1.f);
}

TEST_F(CudaElementwise, Bf16ConversionsMatchTheHostRounding) {
  std::mt19937 rng(4);
  auto values = random_tensor(10007, rng, -1e4f, 1e4f);
  // Values exactly halfway between two bf16 numbers test ties-to-even.
  values.push_back(1.f + 1.f / 256.f);
  values.push_back(1.f + 3.f / 256.f);
  values.push_back(std::numeric_limits<float>::infinity());
  values.push_back(-0.f);
  auto dx = to_device(values);
  auto dy = testing::device_zeros<__nv_bfloat16>(values.size());
  ASSERT_TRUE(cuda::to_bf16(dx.data(), static_cast<int64_t>(values.size()), dy.data(), nullptr).ok());
  auto back = testing::device_zeros<float>(values.size());
  ASSERT_TRUE(cuda::to_f32(dy.data(), static_cast<int64_t>(values.size()), back.data(), nullptr).ok());
  EXPECT_EQ(to_host(back), testing::rounded_to_bf16(values));
}

struct RopeCase {
  RopeLayout layout;
  RopeScaling scaling;
  int64_t head_dim;
};

TEST_F(CudaElementwise, RopeMatchesCpuInBothLayoutsWithLlama3Scaling) {
  RopeScaling llama3;
  llama3.type = RopeScaling::Type::kLlama3;
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.original_max_position_embeddings = 8192;
  // Llama 3.1 scaling as a GGUF stores it (rope_freqs.weight): one factor per frequency.
  RopeScaling gguf_factors;
  gguf_factors.type = RopeScaling::Type::kFreqFactors;
  gguf_factors.freq_factors = {1.0f, 1.5f, 4.0f, 8.0f};
  const RopeCase cases[] = {{RopeLayout::kHalf, {}, 64},
                            {RopeLayout::kAdjacent, {}, 64},
                            {RopeLayout::kHalf, llama3, 128},
                            {RopeLayout::kAdjacent, llama3, 128},
                            {RopeLayout::kHalf, llama3, 8},
                            {RopeLayout::kAdjacent, gguf_factors, 8}};
  std::mt19937 rng(5);
  for (const RopeCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "head_dim " << c.head_dim << ", adjacent "
                                    << (c.layout == RopeLayout::kAdjacent) << ", llama3 "
                                    << (c.scaling.type == RopeScaling::Type::kLlama3) << ", gguf factors "
                                    << (c.scaling.type == RopeScaling::Type::kFreqFactors));
    auto table = cpu::RopeTable::create(c.head_dim, 500000.0, c.scaling);
    ASSERT_TRUE(table.ok()) << table.status().to_string();
    // Explicit positions with gaps (Pulsar's sparse positions) and long-context values.
    const std::vector<int32_t> positions{0, 1, 2, 900, 131071, 1000000, 17};
    const int64_t n = static_cast<int64_t>(positions.size()), heads = 3;
    auto x = random_tensor(static_cast<size_t>(n * heads * c.head_dim), rng, -2, 2);
    std::vector<float> expected = x;
    cpu::apply_rope(expected.data(), n, heads, c.head_dim, positions.data(), *table, c.layout);

    const std::vector<float> inv_freq(table->inv_freq().begin(), table->inv_freq().end());
    auto dx = to_device(x);
    auto dpos = to_device(positions);
    auto dfreq = to_device(inv_freq);
    ASSERT_TRUE(cuda::apply_rope(dx.data(), n, heads, c.head_dim, dpos.data(), dfreq.data(),
                                 c.layout, nullptr)
                    .ok());
    // Same float32 angles; device sinf/cosf are within 2 ulp of the host's.
    testing::expect_all_near(to_host(dx), expected, 2e-6f, 2e-6f, "rope");
  }
}

TEST(CudaElementwiseArguments, BadShapesAreRejectedBeforeAnyLaunch) {
  EXPECT_EQ(cuda::rms_norm(nullptr, 1, 0, nullptr, 1e-5f, nullptr, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::apply_rope(nullptr, 1, 1, 7, nullptr, nullptr, RopeLayout::kHalf, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::swiglu(nullptr, nullptr, -1, nullptr, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace star
