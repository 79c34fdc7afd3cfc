// Phase 1 in chunks across 1–4 ranks, in lock step as the step engine runs it: every rank runs at
// most one chunk per step for as many steps as the slowest rank needs (each rank computes every
// rank's chunk_count), ring segments meet in one step unsplit, and the shards left behind answer a
// query as the shards of one pass per step do (ring bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "star/attention/plan_builder.h"
#include "star/engine/inference.h"
#include "star/engine/phase1_executor.h"
#include "star/engine/phase1_job.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"

namespace star {
namespace {

class Phase1Chunks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::SharedModelDir("--preset tiny --seed 5 --heads 8 --kv-heads 2 --max-positions 32768");
    ASSERT_TRUE(dir_->ok());
    auto m = open_model(dir_->path());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  static EngineModel& engine() { return *model_->engine; }

  static std::vector<int32_t> random_ids(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    const int64_t vocab = std::min<int64_t>(model_->llama->config().vocab_size, 250);
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));
    return ids;
  }

  // Phase 1 of `plan` on this rank (no limit: encode_context), then the query's logits through
  // Phase 2 over the shards every rank left.
  std::vector<float> phase1_then_query(const BlockPlan& plan, const ChunkLimit& limit) {
    Result<std::unique_ptr<KvShard>> shard = engine().new_shard(0);
    EXPECT_TRUE(shard.ok());
    if (!shard.ok()) return {};
    if (limit.max_tokens == 0 && limit.max_cost == 0) {
      Result<Phase1Stats> stats = encode_context(engine(), plan, comm_, **shard);
      EXPECT_TRUE(stats.ok()) << stats.status().to_string();
    } else {
      run_in_lock_step(plan, limit, **shard);
    }
    const std::vector<int32_t> query = random_ids(3, 99);
    std::vector<int32_t> positions(query.size());
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(plan.query_position_start));
    Result<std::unique_ptr<EngineAttention>> attention =
        engine().sharded_query(comm_, **shard, comm_.rank() == plan.query_host, plan.window);
    EXPECT_TRUE(attention.ok());
    if (!attention.ok()) return {};
    Result<std::vector<float>> logits = engine().forward(query, positions, **attention, 3);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    return logits.ok() ? std::move(*logits) : std::vector<float>{};
  }

  // As the step engine: one chunk per step on each rank that has one left, steps until the
  // slowest rank's last chunk.
  void run_in_lock_step(const BlockPlan& plan, const ChunkLimit& limit, KvShard& shard) {
    int64_t steps = 0;
    for (int r = 0; r < comm_.size(); ++r) steps = std::max(steps, Phase1Job::chunk_count(plan, r, limit));
    Result<std::unique_ptr<Phase1Job>> job = Phase1Job::start(engine(), plan, comm_, shard, 0.0, {}, limit);
    ASSERT_TRUE(job.ok()) << job.status().to_string();
    for (int64_t step = 0; step < steps; ++step) {
      if ((*job)->done()) continue;
      Status s = run_phase1_chunk(engine(), **job);
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
    EXPECT_TRUE((*job)->done());
    EXPECT_EQ((*job)->chunks_done(), Phase1Job::chunk_count(plan, comm_.rank(), limit));
  }

  static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  Communicator& comm_ = *world_;
  static testing::SharedModelDir* dir_;
  static RuntimeModel* model_;
};

testing::SharedModelDir* Phase1Chunks::dir_ = nullptr;
RuntimeModel* Phase1Chunks::model_ = nullptr;

TEST_F(Phase1Chunks, ChunkedShardsAnswerAsOnePassPerStep) {
  const std::vector<int32_t> context = random_ids(200, 5);
  std::vector<AttentionConfig> configs(4);
  configs[0].algorithm = "dense";
  configs[1].algorithm = "star";
  configs[1].block_size = 30;
  configs[1].anchor_size = 8;
  configs[1].boundary_overlap = 10;
  configs[2].algorithm = "no-anchor";
  configs[2].block_size = 30;
  configs[3].algorithm = "pulsar";
  configs[3].block_size = 30;
  configs[3].sink_tokens = 6;
  configs[3].chunk_tokens = 4;
  for (const AttentionConfig& config : configs) {
    Result<BlockPlan> plan = build_block_plan(context, comm_.size(), config);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const std::vector<float> whole = phase1_then_query(*plan, 0);
    // By cost (8 keys a token-equivalent, 16 of them a chunk) the ranks' chunk counts differ more:
    // a rank whose block comes after a long prefix cuts it into more, smaller chunks.
    for (const ChunkLimit& limit : {ChunkLimit(1), ChunkLimit(7), ChunkLimit(64), ChunkLimit::by_tokens_and_cost(64, 16, 8)}) {
      SCOPED_TRACE(config.algorithm + ", chunks of " + std::to_string(limit.max_tokens) + " tokens and " +
                   std::to_string(limit.max_cost) + " token-equivalents");
      const std::vector<float> chunked = phase1_then_query(*plan, limit);
      // Shorter chunks sum in another order (tests/engine/phase1_job_test.cpp bounds the KV).
      if (comm_.rank() == 0) EXPECT_LT(max_abs_diff(chunked, whole), 1e-4f);
    }
  }
}

// The ring is collective per layer: every rank's segment is one chunk, run in the same step.
TEST_F(Phase1Chunks, RingSegmentsMeetUnsplitInOneStep) {
  AttentionConfig config;
  config.algorithm = "ring";
  config.block_size = (150 + comm_.size() - 1) / comm_.size();
  Result<BlockPlan> plan = build_block_plan(random_ids(150, 6), comm_.size(), config);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  for (int r = 0; r < comm_.size(); ++r) EXPECT_EQ(Phase1Job::chunk_count(*plan, r, 7), 1);
  const std::vector<float> whole = phase1_then_query(*plan, 0);
  const std::vector<float> chunked = phase1_then_query(*plan, 7);
  if (comm_.rank() == 0) EXPECT_EQ(chunked, whole);
}

}  // namespace
}  // namespace star
