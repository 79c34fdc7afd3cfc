// The engine (Phase 1 executor and Phase 2 generator) on the cuda backend against the engine on
// the CPU backend, on one rank: dense, star and no-anchor agree within bf16 tolerance; ring is
// refused before any work.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "cuda/cuda_test_support.h"
#include "cuda/engine_agreement.h"
#include "star/backend/cuda/engine_model.h"
#include "star/dist/self_communicator.h"
#include "star/engine/inference.h"
#include "star/model/synthetic_model.h"
#include "support/temp_dir.h"

namespace star {
namespace {

class CudaEngine : public testing::CudaTest {
 protected:
  void SetUp() override {
    testing::CudaTest::SetUp();
    if (IsSkipped()) return;
    // bf16 weights: the device holds the CPU's weights exactly.
    SyntheticModelSpec spec;
    spec.config = *synthetic_preset("tiny");
    spec.dtype = DType::kBF16;
    spec.seed = 17;
    if (Status s = write_synthetic_model(spec, dir_.path()); !s.ok()) testing::die_on_setup(s);
    for (RuntimeModel* model : {&cpu_, &gpu_}) {
      Result<RuntimeModel> opened = open_model(dir_.path());
      if (!opened.ok()) testing::die_on_setup(opened.status());
      *model = std::move(*opened);
    }
    auto engine = cuda::make_engine_model(*gpu_.llama, nullptr);
    if (!engine.ok()) testing::die_on_setup(engine.status());
    gpu_.engine = std::move(*engine);
  }

  InferenceRequest request(const std::string& algorithm) const {
    const int64_t vocab = cpu_.llama->config().vocab_size;
    InferenceRequest r;
    for (int i = 0; i < 150; ++i) r.context_ids.push_back(static_cast<int32_t>((i * 7919 + 3) % vocab));
    for (int i = 0; i < 5; ++i) r.query_ids.push_back(static_cast<int32_t>((i * 104729 + 11) % vocab));
    r.attention.algorithm = algorithm;
    r.attention.block_size = 48;
    r.attention.anchor_size = 48;
    r.generation.max_tokens = 8;
    return r;
  }

  testing::TempDir dir_;
  RuntimeModel cpu_, gpu_;
  SelfCommunicator self_;
};

TEST_F(CudaEngine, DenseStarAndNoAnchorAgreeWithTheCpuEngine) {
  ASSERT_EQ(gpu_.engine->backend_name(), "cuda");
  for (const std::string algorithm : {"dense", "star", "no-anchor"}) {
    SCOPED_TRACE(algorithm);
    testing::expect_engines_agree(
        request(algorithm), cpu_.llama->config().vocab_size, /*is_root=*/true,
        [&](const InferenceRequest& r) { return run_inference(cpu_, self_, r); },
        [&](const InferenceRequest& r) { return run_inference(gpu_, self_, r); });
  }
}

TEST_F(CudaEngine, AnEncodedContextAnswersManyQueriesOnTheDevice) {
  InferenceRequest r = request("star");
  r.generation.ignore_eos = true;
  auto context = encode_request_context(gpu_, self_, r.context_ids, r.attention, r.generation.max_tokens);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  const int64_t encoded = context->shard->tokens();
  EXPECT_EQ(encoded, 150);
  auto first = answer_query(gpu_, self_, *context, r.query_ids, r.generation);
  auto again = answer_query(gpu_, self_, *context, r.query_ids, r.generation);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(context->shard->tokens(), encoded);
  EXPECT_EQ(first->tokens, again->tokens);
}

// Two steps of a fused forward (a Phase 1 chunk's rows, then three sequences' Phase 2 rows) on an
// engine: the logits of each part's last row, step after step.
std::vector<float> fused_steps(EngineModel& engine, Communicator& comm) {
  const int64_t vocab = engine.config().vocab_size;
  auto ids = [&](int64_t n, int salt) {
    std::vector<int32_t> t(n);
    for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919 + 131 * salt + 7) % vocab);
    return t;
  };
  auto from = [](int64_t first, int64_t n) {
    std::vector<int32_t> p(n);
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(first + i);
    return p;
  };
  const std::vector<int64_t> context_lengths{60, 9, 33}, query_lengths{4, 1, 3};
  std::vector<std::unique_ptr<KvShard>> contexts, owns;
  for (size_t i = 0; i < context_lengths.size(); ++i) {
    contexts.push_back(engine.new_shard(context_lengths[i]).value());
    owns.push_back(engine.new_shard(8).value());
    auto causal = engine.local_causal(*contexts.back());
    EXPECT_TRUE(causal.ok());
    EXPECT_TRUE(engine.forward(ids(context_lengths[i], static_cast<int>(i)), from(0, context_lengths[i]), **causal, 0)
                    .ok());
  }
  auto chunk_shard = engine.new_shard(8).value();
  std::vector<float> logits;
  int64_t chunk_done = 0;
  std::vector<int64_t> next(context_lengths);
  for (int step = 0; step < 2; ++step) {
    std::vector<QuerySlot> slots;
    std::vector<int32_t> tokens = ids(4, 40 + step), positions = from(chunk_done, 4);
    std::vector<int64_t> last_rows{3};
    for (size_t i = 0; i < contexts.size(); ++i) {
      const int64_t rows = step == 0 ? query_lengths[i] : 1;
      slots.push_back({contexts[i].get(), owns[i].get(), {}, 0.0, rows});
      const auto t = ids(rows, 10 + static_cast<int>(i) + step), p = from(next[i], rows);
      tokens.insert(tokens.end(), t.begin(), t.end());
      positions.insert(positions.end(), p.begin(), p.end());
      last_rows.push_back(static_cast<int64_t>(tokens.size()) - 1);
      next[i] += rows;
    }
    auto chunk = engine.local_causal(*chunk_shard);
    auto batched = engine.batched_query(comm, slots);
    EXPECT_TRUE(chunk.ok() && batched.ok());
    auto split = engine.row_split({RowPart{chunk->get(), 4}, RowPart{batched->get(), static_cast<int64_t>(tokens.size()) - 4}});
    EXPECT_TRUE(split.ok()) << split.status().to_string();
    auto out = engine.forward_rows(tokens, positions, **split, last_rows);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    if (out.ok()) logits.insert(logits.end(), out->begin(), out->end());
    chunk_done += 4;
  }
  return logits;
}

TEST_F(CudaEngine, AFusedBatchedForwardAgreesWithTheCpuEngine) {
  const std::vector<float> cpu = fused_steps(*cpu_.engine, self_), gpu = fused_steps(*gpu_.engine, self_);
  testing::expect_logits_close(gpu, cpu, "chunk and batched Phase 2 rows");
}

TEST_F(CudaEngine, RingIsRefusedOnEveryRankBeforeAnyWork) {
  InferenceRequest r = request("ring");
  r.attention.block_size = 150;
  auto out = run_inference(gpu_, self_, r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("attention 'ring'"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("cuda backend"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace star
