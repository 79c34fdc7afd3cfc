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
  auto context = encode_request_context(gpu_, self_, r.context_ids, r.attention, 64);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  const int64_t encoded = context->shard->tokens();
  EXPECT_EQ(encoded, 150);
  auto first = answer_query(gpu_, self_, *context, r.query_ids, r.generation);
  auto again = answer_query(gpu_, self_, *context, r.query_ids, r.generation);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(context->shard->tokens(), encoded);
  EXPECT_EQ(first->tokens, again->tokens);
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
