// The engine's backend seam on the CPU: CpuEngineModel hands the engine's buffers to LlamaModel
// and the LayerAttention classes unchanged (bit for bit the direct calls), appends shards exactly,
// refuses shards and attentions of another backend, and encode_context refuses a plan whose step
// kinds the backend cannot run on every rank before any work.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>

#include "star/attention/layer_attentions.h"
#include "star/dist/self_communicator.h"
#include "star/engine/cpu_engine_model.h"
#include "star/engine/inference.h"
#include "star/model/synthetic_model.h"
#include "support/temp_dir.h"

namespace star {
namespace {

RuntimeModel tiny_model() {
  testing::TempDir dir;
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.seed = 3;
  if (Status s = write_synthetic_model(spec, dir.path()); !s.ok()) ADD_FAILURE() << s.to_string();
  Result<RuntimeModel> model = open_model(dir.path());
  if (!model.ok()) ADD_FAILURE() << model.status().to_string();
  return std::move(*model);
}

std::vector<int32_t> tokens_of(size_t n, int64_t vocab, int salt) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919 + 13 * salt) % static_cast<size_t>(vocab));
  return t;
}

std::vector<int32_t> positions_from(int32_t first, size_t n) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), first);
  return p;
}

// --kv-dtype through open_model: the engine's shards store that type and run the same arithmetic
// as a KvCache of that type driven by hand; q8_0 is refused where head rows are not whole blocks.
TEST(CpuEngineKvDType, ShardsStoreTheTypeOpenModelWasGiven) {
  testing::TempDir dir;
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.seed = 3;
  ASSERT_TRUE(write_synthetic_model(spec, dir.path()).ok());
  const Result<RuntimeModel> refused = open_model(dir.path(), KvDType::kQ8_0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(dir.path().string()), std::string::npos);
  EXPECT_NE(refused.status().message().find("--kv-dtype q8_0"), std::string::npos);
  EXPECT_NE(refused.status().message().find("head_dim is 16"), std::string::npos) << refused.status().message();

  Result<RuntimeModel> model = open_model(dir.path(), KvDType::kBF16);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const LlamaConfig& c = model->llama->config();
  EngineModel& engine = *model->engine;
  EXPECT_EQ(engine.kv_dtype(), KvDType::kBF16);
  EXPECT_EQ(engine.kv_bytes_per_token(), 2 * c.n_layers * c.n_kv_heads * c.head_dim * 2);
  auto shard = engine.new_shard(0);
  ASSERT_TRUE(shard.ok());
  auto attention = engine.local_causal(**shard);
  ASSERT_TRUE(attention.ok());
  KvCache direct_cache(c.n_layers, c.n_kv_heads, c.head_dim, KvDType::kBF16);
  LocalCausalAttention direct(AttentionShape::of(c), direct_cache);
  const auto tokens = tokens_of(7, c.vocab_size, 2);
  const auto positions = positions_from(0, 7);
  auto through_engine = engine.forward(tokens, positions, **attention, 7);
  auto by_hand = model->llama->forward(tokens, positions, direct, 7);
  ASSERT_TRUE(through_engine.ok() && by_hand.ok());
  EXPECT_EQ(*through_engine, *by_hand);
  const KvCache& kept = dynamic_cast<const CpuKvShard&>(**shard).cache;
  EXPECT_EQ(kept.dtype(), KvDType::kBF16);
  EXPECT_EQ(static_cast<int64_t>((*shard)->bytes()), 7 * engine.kv_bytes_per_token());
  EXPECT_EQ(std::memcmp(kept.keys(0).data, direct_cache.keys(0).data, 7 * kept.row_bytes()), 0);
}

class CpuEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new RuntimeModel(tiny_model()); }
  static void TearDownTestSuite() { delete model_; }
  static RuntimeModel* model_;
};
RuntimeModel* CpuEngine::model_ = nullptr;

TEST_F(CpuEngine, OpenModelRunsTheEngineOnTheCpu) {
  ASSERT_NE(model_->engine, nullptr);
  EXPECT_EQ(model_->engine->backend_name(), "cpu");
  EXPECT_EQ(&model_->engine->config(), &model_->llama->config());
}

TEST_F(CpuEngine, ForwardIsTheLlamaModelsForwardBitForBit) {
  const LlamaConfig& c = model_->llama->config();
  EngineModel& engine = *model_->engine;
  auto shard = engine.new_shard(0);
  ASSERT_TRUE(shard.ok());
  auto attention = engine.local_causal(**shard);
  ASSERT_TRUE(attention.ok());
  KvCache direct_cache(c.n_layers, c.n_kv_heads, c.head_dim);
  LocalCausalAttention direct(AttentionShape::of(c), direct_cache);
  // A prefill, then a decode step on the same cache.
  for (auto [n, first] : {std::pair<size_t, int32_t>{9, 0}, std::pair<size_t, int32_t>{1, 9}}) {
    const auto tokens = tokens_of(n, c.vocab_size, first + 1);
    const auto positions = positions_from(first, n);
    auto through_engine = engine.forward(tokens, positions, **attention, static_cast<int64_t>(n));
    auto by_hand = model_->llama->forward(tokens, positions, direct, static_cast<int64_t>(n));
    ASSERT_TRUE(through_engine.ok() && by_hand.ok());
    EXPECT_EQ(*through_engine, *by_hand);
  }
  EXPECT_EQ((*shard)->tokens(), 10);
  EXPECT_EQ((*shard)->bytes(), direct_cache.bytes());
  const KvCache& kept = dynamic_cast<const CpuKvShard&>(**shard).cache;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(std::memcmp(kept.keys(l).data, direct_cache.keys(l).data, direct_cache.bytes() / c.n_layers / 2), 0);
    EXPECT_EQ(std::memcmp(kept.values(l).data, direct_cache.values(l).data, direct_cache.bytes() / c.n_layers / 2), 0);
  }
}

TEST_F(CpuEngine, AppendCopiesEveryRowAfterTheOnesHeld) {
  const LlamaConfig& c = model_->llama->config();
  EngineModel& engine = *model_->engine;
  auto from = engine.new_shard(0);
  auto to = engine.new_shard(4);
  ASSERT_TRUE(from.ok() && to.ok());
  for (auto [shard, n] : {std::pair{from->get(), size_t{5}}, std::pair{to->get(), size_t{3}}}) {
    auto attention = engine.local_causal(*shard);
    ASSERT_TRUE(attention.ok());
    ASSERT_TRUE(engine.forward(tokens_of(n, c.vocab_size, static_cast<int>(n)), positions_from(0, n), **attention, 0).ok());
  }
  ASSERT_TRUE(engine.append(**from, **to).ok());
  EXPECT_EQ((*to)->tokens(), 8);
  EXPECT_EQ((*to)->bytes(), 8 * KvCache(c.n_layers, c.n_kv_heads, c.head_dim).bytes_per_token());
  EXPECT_EQ(static_cast<int64_t>((*to)->bytes()), 8 * engine.kv_bytes_per_token());
  const KvCache& a = dynamic_cast<const CpuKvShard&>(**from).cache;
  const KvCache& b = dynamic_cast<const CpuKvShard&>(**to).cache;
  const size_t row_bytes = a.row_bytes();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(std::memcmp(b.keys(l).data + 3 * row_bytes, a.keys(l).data, 5 * row_bytes), 0) << "layer " << l;
    EXPECT_EQ(std::memcmp(b.values(l).data + 3 * row_bytes, a.values(l).data, 5 * row_bytes), 0) << "layer " << l;
  }
}

class ForeignShard final : public KvShard {
 public:
  int64_t tokens() const override { return 0; }
  size_t bytes() const override { return 0; }
  void truncate(int64_t) override {}
};

class ForeignAttention final : public EngineAttention {};

TEST_F(CpuEngine, ShardsAndAttentionsOfAnotherBackendAreRefused) {
  EngineModel& engine = *model_->engine;
  ForeignShard foreign;
  auto own = engine.new_shard(0);
  ASSERT_TRUE(own.ok());
  SelfCommunicator self;
  EXPECT_EQ(engine.local_causal(foreign).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.prefixed_block(foreign, **own, 0, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.ring_segment(self, foreign, {0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.sharded_query(self, foreign, true, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.append(foreign, **own).code(), StatusCode::kInvalidArgument);
  ForeignAttention attention;
  const std::vector<int32_t> token{1}, position{0};
  EXPECT_EQ(engine.forward(token, position, attention, 1).status().code(), StatusCode::kInvalidArgument);
}

// The CPU backend as a backend without ring steps (as the CUDA one is).
class RinglessEngine final : public EngineModel {
 public:
  explicit RinglessEngine(std::unique_ptr<EngineModel> cpu) : cpu_(std::move(cpu)) {}
  const LlamaConfig& config() const override { return cpu_->config(); }
  std::string_view backend_name() const override { return "ringless"; }
  int64_t kv_bytes_per_token() const override { return cpu_->kv_bytes_per_token(); }
  KvDType kv_dtype() const override { return cpu_->kv_dtype(); }
  Status supports(EncodeStep::Kind kind) const override {
    return kind == EncodeStep::Kind::kRingSegment ? unimplemented("no ring here") : ok_status();
  }
  Result<std::unique_ptr<KvShard>> new_shard(int64_t capacity) override { return cpu_->new_shard(capacity); }
  Status append(const KvShard& from, KvShard& to) override { return cpu_->append(from, to); }
  Result<std::unique_ptr<EngineAttention>> local_causal(KvShard& cache) override { return cpu_->local_causal(cache); }
  Result<std::unique_ptr<EngineAttention>> prefixed_block(const KvShard& prefix, KvShard& shard, int64_t block_first,
                                                          AttentionWindow window) override {
    return cpu_->prefixed_block(prefix, shard, block_first, window);
  }
  Result<std::unique_ptr<EngineAttention>> ring_segment(Communicator&, KvShard&, std::vector<int64_t>) override {
    ADD_FAILURE() << "a ring step ran on a backend that refuses them";
    return unimplemented("no ring here");
  }
  Result<std::unique_ptr<EngineAttention>> sharded_query(Communicator& comm, KvShard& shard, bool is_query_host,
                                                         AttentionWindow window) override {
    return cpu_->sharded_query(comm, shard, is_query_host, window);
  }
  Result<std::unique_ptr<BatchedQueryAttention>> batched_query(Communicator& comm,
                                                               std::vector<QuerySlot> slots) override {
    return cpu_->batched_query(comm, std::move(slots));
  }
  Result<std::unique_ptr<EngineAttention>> row_split(std::vector<RowPart> parts) override {
    return cpu_->row_split(std::move(parts));
  }
  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     EngineAttention& attention, int64_t logit_rows) override {
    return cpu_->forward(tokens, positions, attention, logit_rows);
  }
  Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                          EngineAttention& attention, std::span<const int64_t> logit_rows,
                                          VocabSlice vocab, const RowSharing* sharing, int64_t phase1_rows,
                                          bool largest_only) override {
    return cpu_->forward_rows(tokens, positions, attention, logit_rows, vocab, sharing, phase1_rows, largest_only);
  }

 private:
  std::unique_ptr<EngineModel> cpu_;
};

InferenceRequest request_of(const LlamaConfig& c, const std::string& algorithm) {
  InferenceRequest r;
  r.context_ids = tokens_of(40, c.vocab_size, 5);
  r.query_ids = tokens_of(3, c.vocab_size, 9);
  r.attention.algorithm = algorithm;
  r.attention.block_size = algorithm == "ring" ? 40 : 16;  // ring: one segment per rank
  r.generation.max_tokens = 4;
  r.generation.ignore_eos = true;
  r.generation.return_query_logits = true;
  return r;
}

TEST(EngineBackends, APlanWithStepsTheBackendCannotRunFailsBeforeAnyWork) {
  RuntimeModel model = tiny_model();
  SelfCommunicator self;
  const LlamaConfig& c = model.llama->config();
  auto cpu_star = run_inference(model, self, request_of(c, "star"));
  ASSERT_TRUE(cpu_star.ok()) << cpu_star.status().to_string();

  model.engine = std::make_unique<RinglessEngine>(std::move(model.engine));
  auto ring = run_inference(model, self, request_of(c, "ring"));
  ASSERT_FALSE(ring.ok());
  EXPECT_EQ(ring.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(ring.status().message().find("attention 'ring'"), std::string::npos) << ring.status().message();

  // Every other step kind goes through the engine as before.
  auto star = run_inference(model, self, request_of(c, "star"));
  ASSERT_TRUE(star.ok()) << star.status().to_string();
  EXPECT_EQ(star->generation.query_logits, cpu_star->generation.query_logits);
  EXPECT_EQ(star->generation.tokens, cpu_star->generation.tokens);
  EXPECT_EQ(star->shard_bytes, cpu_star->shard_bytes);
}

}  // namespace
}  // namespace star
