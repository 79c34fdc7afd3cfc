// DeviceLlamaModel against the CPU LlamaModel on a synthetic bf16 model, and the device attention
// layers against each other and against their CPU twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "cuda/cuda_test_support.h"
#include "star/attention/layer_attentions.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/backend/cuda/llama_model.h"
#include "star/dist/self_communicator.h"
#include "star/model/llama_model.h"
#include "star/model/model_loader.h"
#include "star/model/synthetic_model.h"
#include "support/temp_dir.h"

namespace star {
namespace {

using CudaModel = testing::CudaTest;

struct Models {
  std::unique_ptr<cuda::DeviceLlamaModel> gpu;
  std::unique_ptr<LlamaModel> cpu;
};

// The "tiny" preset (GQA, llama3 rope scaling) stored in bf16, so the device's bf16 weights are
// the CPU's float32 weights exactly; the backends then differ only by the GEMMs rounding their
// input activations to bf16.
Models tiny_models(bool tied) {
  testing::TempDir dir;
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.config.tie_word_embeddings = tied;
  spec.dtype = DType::kBF16;
  spec.seed = 11;
  if (Status s = write_synthetic_model(spec, dir.path()); !s.ok()) testing::die_on_setup(s);
  Result<LoadedModel> loaded = load_model(dir.path());
  if (!loaded.ok()) testing::die_on_setup(loaded.status());
  auto gpu = cuda::DeviceLlamaModel::create(loaded->config, loaded->weights);
  if (!gpu.ok()) testing::die_on_setup(gpu.status());
  auto cpu = LlamaModel::create(loaded->config, std::move(loaded->weights));
  if (!cpu.ok()) testing::die_on_setup(cpu.status());
  return {std::move(*gpu), std::make_unique<LlamaModel>(std::move(*cpu))};
}

std::vector<int32_t> iota_from(int32_t first, size_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int32_t> some_tokens(size_t n, int64_t vocab) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(vocab));
  return t;
}

// Logits of unit scale: bf16 activations in the GEMMs move them by well under 1%.
void expect_close_logits(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  ASSERT_EQ(gpu.size(), cpu.size());
  double diff = 0, norm = 0;
  float worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    diff += (gpu[i] - cpu[i]) * static_cast<double>(gpu[i] - cpu[i]);
    norm += cpu[i] * static_cast<double>(cpu[i]);
    worst = std::max(worst, std::abs(gpu[i] - cpu[i]));
  }
  EXPECT_LT(std::sqrt(diff / norm), 0.02) << "relative L2 error of the logits";
  EXPECT_LT(worst, 0.1f) << "largest logit difference";
}

TEST_F(CudaModel, PrefillAndDecodeMatchTheCpuModel) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied embeddings" : "separate lm_head");
    Models m = tiny_models(tied);
    const LlamaConfig& c = m.cpu->config();
    KvCache cpu_cache(c.n_layers, c.n_kv_heads, c.head_dim);
    LocalCausalAttention cpu_attention(AttentionShape::of(c), cpu_cache);
    // Capacity 8 < 20 prompt tokens: the device cache has to grow (and copy) on the way.
    auto gpu_cache = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 8);
    ASSERT_TRUE(gpu_cache.ok()) << gpu_cache.status().to_string();
    cuda::DeviceCausalAttention gpu_attention(AttentionShape::of(c), *gpu_cache);

    const auto prompt = some_tokens(20, c.vocab_size);
    auto cpu_logits = m.cpu->forward(prompt, iota_from(0, 20), cpu_attention, 4);
    auto gpu_logits = m.gpu->forward(prompt, iota_from(0, 20), gpu_attention, 4);
    ASSERT_TRUE(cpu_logits.ok() && gpu_logits.ok()) << gpu_logits.status().to_string();
    expect_close_logits(*gpu_logits, *cpu_logits);

    for (int32_t step = 0; step < 4; ++step) {
      const std::vector<int32_t> token{static_cast<int32_t>((step * 31 + 5) % c.vocab_size)};
      const std::vector<int32_t> position{20 + step};
      cpu_logits = m.cpu->forward(token, position, cpu_attention, 1);
      gpu_logits = m.gpu->forward(token, position, gpu_attention, 1);
      ASSERT_TRUE(cpu_logits.ok() && gpu_logits.ok()) << gpu_logits.status().to_string();
      expect_close_logits(*gpu_logits, *cpu_logits);
    }
    EXPECT_EQ(gpu_cache->tokens(), 24);
  }
}

TEST_F(CudaModel, ShardedQueryOnOneRankEqualsCausalAttentionExactly) {
  Models m = tiny_models(true);
  const LlamaConfig& c = m.cpu->config();
  auto causal_cache = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 64);
  auto shard = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 64);
  ASSERT_TRUE(causal_cache.ok() && shard.ok());
  cuda::DeviceCausalAttention causal(AttentionShape::of(c), *causal_cache);
  SelfCommunicator self;
  cuda::DeviceShardedQueryAttention sharded(AttentionShape::of(c), self, *shard, /*is_query_host=*/true);

  const auto context = some_tokens(30, c.vocab_size);
  ASSERT_TRUE(m.gpu->forward(context, iota_from(0, 30), causal, 0).ok());
  ASSERT_TRUE(m.gpu->forward(context, iota_from(0, 30), sharded, 0).ok());
  const auto query = some_tokens(5, c.vocab_size);
  auto a = m.gpu->forward(query, iota_from(30, 5), causal, 5);
  auto b = m.gpu->forward(query, iota_from(30, 5), sharded, 5);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST_F(CudaModel, Phase2OnTheGpuOverACpuEncodedShardMatchesTheCpu) {
  Models m = tiny_models(true);
  const LlamaConfig& c = m.cpu->config();
  const AttentionShape shape = AttentionShape::of(c);
  const auto context = some_tokens(40, c.vocab_size);
  const auto query = some_tokens(6, c.vocab_size);
  for (bool query_host : {true, false}) {
    SCOPED_TRACE(query_host ? "query host (causal among query tokens)" : "remote shard (no mask)");
    KvCache cpu_shard(c.n_layers, c.n_kv_heads, c.head_dim);
    LocalCausalAttention encode(shape, cpu_shard);
    ASSERT_TRUE(m.cpu->forward(context, iota_from(0, 40), encode, 0).ok());

    auto gpu_shard = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 0);
    ASSERT_TRUE(gpu_shard.ok());
    ASSERT_TRUE(gpu_shard->append_from_host(cpu_shard, m.gpu->stream()).ok());
    ASSERT_EQ(gpu_shard->tokens(), 40);

    SelfCommunicator self;
    ShardedQueryAttention cpu_phase2(shape, self, cpu_shard, query_host);
    cuda::DeviceShardedQueryAttention gpu_phase2(shape, self, *gpu_shard, query_host);
    auto cpu_logits = m.cpu->forward(query, iota_from(40, 6), cpu_phase2, 6);
    auto gpu_logits = m.gpu->forward(query, iota_from(40, 6), gpu_phase2, 6);
    ASSERT_TRUE(cpu_logits.ok() && gpu_logits.ok()) << gpu_logits.status().to_string();
    expect_close_logits(*gpu_logits, *cpu_logits);
  }
}

TEST_F(CudaModel, StarBlockAfterAnAnchorMatchesTheCpu) {
  Models m = tiny_models(true);
  const LlamaConfig& c = m.cpu->config();
  const AttentionShape shape = AttentionShape::of(c);
  // Anchor: the first 8 context tokens at positions 0..7; block: 12 tokens at positions 24..35.
  const auto anchor = some_tokens(8, c.vocab_size);
  const auto block = some_tokens(12, c.vocab_size);
  KvCache cpu_prefix(c.n_layers, c.n_kv_heads, c.head_dim), cpu_shard(c.n_layers, c.n_kv_heads, c.head_dim);
  auto gpu_prefix = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 8);
  auto gpu_shard = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 12);
  ASSERT_TRUE(gpu_prefix.ok() && gpu_shard.ok());

  LocalCausalAttention cpu_extend(shape, cpu_prefix);
  cuda::DeviceCausalAttention gpu_extend(shape, *gpu_prefix);
  ASSERT_TRUE(m.cpu->forward(anchor, iota_from(0, 8), cpu_extend, 0).ok());
  ASSERT_TRUE(m.gpu->forward(anchor, iota_from(0, 8), gpu_extend, 0).ok());

  PrefixedBlockAttention cpu_block(shape, cpu_prefix, cpu_shard, 0);
  cuda::DevicePrefixedBlockAttention gpu_block(shape, *gpu_prefix, *gpu_shard, 0);
  auto cpu_logits = m.cpu->forward(block, iota_from(24, 12), cpu_block, 12);
  auto gpu_logits = m.gpu->forward(block, iota_from(24, 12), gpu_block, 12);
  ASSERT_TRUE(cpu_logits.ok() && gpu_logits.ok()) << gpu_logits.status().to_string();
  expect_close_logits(*gpu_logits, *cpu_logits);
  EXPECT_EQ(gpu_prefix->tokens(), 8);   // the anchor is read, never extended by the block
  EXPECT_EQ(gpu_shard->tokens(), 12);   // only the block's KV enters the shard
}

TEST_F(CudaModel, BadTokenIdIsRejectedWithItsValue) {
  Models m = tiny_models(true);
  const LlamaConfig& c = m.cpu->config();
  auto cache = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, 4);
  ASSERT_TRUE(cache.ok());
  cuda::DeviceCausalAttention attention(AttentionShape::of(c), *cache);
  const std::vector<int32_t> bad{1, static_cast<int32_t>(c.vocab_size)};
  auto logits = m.gpu->forward(bad, iota_from(0, 2), attention, 1);
  ASSERT_FALSE(logits.ok());
  EXPECT_EQ(logits.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(logits.status().message().find(std::to_string(c.vocab_size)), std::string::npos);
}

}  // namespace
}  // namespace star
