// The engine on the cuda backend across ranks (mpirun with 1 and 2 ranks, one GPU each): Phase 1
// on each rank's GPU, Phase 2's (out, lse) all-gather over NCCL on device buffers, and the result
// against the same run on the CPU backend over MPI. Skips on every rank alike when some host has
// fewer GPUs than ranks.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda/cuda_test_support.h"
#include "cuda/mpi/gpu_per_rank.h"
#include "cuda/engine_agreement.h"
#include "star/backend/cuda/engine_model.h"
#include "star/dist/nccl_communicator.h"
#include "star/engine/inference.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"

namespace star {
namespace {

class NcclEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    auto local = host_local_rank();
    ASSERT_TRUE(local.ok()) << local.status().to_string();
    if (const std::string why = testing::missing_gpu_per_rank(local->rank); !why.empty()) GTEST_SKIP() << why;
    // bf16 weights, GQA 4:1 and llama3 rope scaling.
    dir_ = std::make_unique<testing::SharedModelDir>("--preset tiny --seed 5 --heads 8 --kv-heads 2 --dtype bf16");
    ASSERT_TRUE(dir_->ok());
    for (RuntimeModel* model : {&cpu_, &gpu_}) {
      auto opened = open_model(dir_->path());
      ASSERT_TRUE(opened.ok()) << opened.status().to_string();
      *model = std::move(*opened);
    }
    auto nccl = NcclCommunicator::create_world();
    ASSERT_TRUE(nccl.ok()) << nccl.status().to_string();
    ASSERT_EQ(nccl->get()->device(), local->rank);
    auto engine = cuda::make_engine_model(*gpu_.llama, std::move(*nccl));
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    gpu_.engine = std::move(*engine);
  }

  InferenceRequest request(const std::string& algorithm) const {
    const int64_t vocab = cpu_.llama->config().vocab_size;
    InferenceRequest r;
    for (int i = 0; i < 200; ++i) r.context_ids.push_back(static_cast<int32_t>((i * 7919 + 3) % vocab));
    for (int i = 0; i < 6; ++i) r.query_ids.push_back(static_cast<int32_t>((i * 104729 + 11) % vocab));
    r.attention.algorithm = algorithm;
    r.attention.block_size = 200 / (2 * comm_->size()) + 1;  // two blocks per rank
    r.generation.max_tokens = 8;
    return r;
  }

  std::unique_ptr<MpiCommunicator> comm_ = testing::world();
  std::unique_ptr<testing::SharedModelDir> dir_;
  RuntimeModel cpu_, gpu_;
};

TEST_F(NcclEngine, DenseAndStarAgreeWithTheCpuEngineOverMpi) {
  for (const std::string algorithm : {"dense", "star"}) {
    SCOPED_TRACE(algorithm);
    testing::expect_engines_agree(
        request(algorithm), cpu_.llama->config().vocab_size, comm_->rank() == 0,
        [&](const InferenceRequest& r) { return run_inference(cpu_, *comm_, r); },
        [&](const InferenceRequest& r) { return run_inference(gpu_, *comm_, r); });
  }
}

TEST_F(NcclEngine, Phase2SendsTheSameFloatsOverNcclAsOverMpi) {
  InferenceRequest r = request("star");
  r.generation.ignore_eos = true;
  auto cpu = run_inference(cpu_, *comm_, r);
  auto gpu = run_inference(gpu_, *comm_, r);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  EXPECT_EQ(gpu->generation.floats_sent, cpu->generation.floats_sent);
  if (comm_->size() > 1) {
    EXPECT_GT(gpu->generation.floats_sent, 0);
  }
}

}  // namespace
}  // namespace star
