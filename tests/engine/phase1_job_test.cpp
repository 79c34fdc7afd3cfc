// Phase 1 in chunks against Phase 1 in one pass per step (encode_context, which the exactness and
// golden tests pin): for every algorithm, on every rank of its plan, a Phase1Job with chunks of 1, 7
// and 64 tokens, and with chunks sized by cost (chunk_limit.h), leaves the same shard, books the same
// tokens and blocks, runs exactly chunk_count chunks, and records RocketKV's window across chunk
// edges. Ranks of a plan whose Phase 1 sends
// nothing (all but ring) run one after another here; ring runs on one rank (tests/mpi covers two).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "star/attention/plan_builder.h"
#include "star/dist/self_communicator.h"
#include "star/engine/cpu_engine_model.h"
#include "star/engine/inference.h"
#include "star/engine/phase1_executor.h"
#include "star/engine/phase1_job.h"
#include "star/model/kv_dtype.h"
#include "star/model/synthetic_model.h"
#include "support/temp_dir.h"

namespace star {
namespace {

// Rank `rank` of `size` for a plan whose Phase 1 never communicates: every collective fails.
class LoneRank final : public Communicator {
 public:
  LoneRank(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }

 private:
  Status refuse() {
    ADD_FAILURE() << "Phase 1 of a non-ring plan communicated";
    return failed_precondition("LoneRank has no peers");
  }
  Status do_all_gather(const void*, size_t, void*) override { return refuse(); }
  Status do_broadcast(void*, size_t, int) override { return refuse(); }
  Status do_send_recv(const void*, size_t, int, void*, size_t, int) override { return refuse(); }
  Status do_barrier() override { return refuse(); }

  int rank_;
  int size_;
};

struct Encoded {
  std::unique_ptr<KvShard> shard;
  Phase1Stats stats;
  std::vector<std::tuple<int, int, int>> progress;  // (block index, done, total) per callback
  int64_t chunks_run = 0;
  rocket::WindowQueries window;
};

constexpr int64_t kNoLimit = 0;

class Phase1JobTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::TempDir dir;
    SyntheticModelSpec spec;
    spec.config = *synthetic_preset("tiny");
    spec.config.n_heads = 8;
    spec.config.n_kv_heads = 2;  // GQA: four query heads per KV head
    spec.seed = 11;
    ASSERT_TRUE(write_synthetic_model(spec, dir.path()).ok());
    Result<RuntimeModel> model = open_model(dir.path());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = new RuntimeModel(std::move(*model));
  }
  static void TearDownTestSuite() { delete model_; }

  static EngineModel& engine() { return *model_->engine; }

  static std::vector<int32_t> context(int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    const int64_t vocab = std::min<int64_t>(model_->llama->config().vocab_size, 250);
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 17) % vocab);
    return ids;
  }

  static BlockPlan plan(const AttentionConfig& config, int ranks, int64_t context_tokens = 150) {
    Result<BlockPlan> p = build_block_plan(context(context_tokens), ranks, config);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? std::move(*p) : BlockPlan{};
  }

  // Rank `comm.rank()`'s Phase 1 of `plan`: through encode_context (kNoLimit) or a Phase1Job with
  // that limit, each chunk in a forward of its own.
  static Encoded encode(const BlockPlan& plan, Communicator& comm, const ChunkLimit& limit, int64_t window_rows = 0) {
    Encoded e;
    Result<std::unique_ptr<KvShard>> shard = engine().new_shard(0);
    EXPECT_TRUE(shard.ok());
    e.shard = std::move(*shard);
    const WindowRecording window{window_rows, window_rows > 0 ? &e.window : nullptr};
    const BlockProgress progress = [&e](int block, int done, int total) { e.progress.emplace_back(block, done, total); };
    if (limit.max_tokens == kNoLimit && limit.max_cost == 0) {
      Result<Phase1Stats> stats = encode_context(engine(), plan, comm, *e.shard, progress, 0.0, window);
      EXPECT_TRUE(stats.ok()) << stats.status().to_string();
      if (stats.ok()) e.stats = *stats;
      return e;
    }
    Result<std::unique_ptr<Phase1Job>> job =
        Phase1Job::start(engine(), plan, comm, *e.shard, 0.0, window, limit, progress);
    EXPECT_TRUE(job.ok()) << job.status().to_string();
    if (!job.ok()) return e;
    while (!(*job)->done()) {
      Result<Phase1Chunk> chunk = (*job)->next_chunk();
      EXPECT_TRUE(chunk.ok()) << chunk.status().to_string();
      if (!chunk.ok()) return e;
      // A chunk never exceeds the limit, except a ring segment, which is never split.
      if (plan.algorithm != "ring") EXPECT_LE(static_cast<int64_t>(chunk->tokens.size()), limit.max_tokens);
      EXPECT_EQ(chunk->tokens.size(), chunk->positions.size());
      Result<std::vector<float>> r = engine().forward(chunk->tokens, chunk->positions, *chunk->attention, 0);
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      Status finished = (*job)->finish_chunk();
      EXPECT_TRUE(finished.ok()) << finished.to_string();
      if (!r.ok() || !finished.ok()) return e;
      ++e.chunks_run;
    }
    EXPECT_EQ((*job)->chunks_done(), e.chunks_run);
    e.stats = (*job)->stats();
    return e;
  }

  static const KvCache& cache(const Encoded& e) { return dynamic_cast<const CpuKvShard&>(*e.shard).cache; }

  // The largest |a - b| over every key and value of every layer.
  static float max_kv_difference(const KvCache& a, const KvCache& b) {
    EXPECT_EQ(a.tokens(), b.tokens());
    if (a.tokens() != b.tokens()) return INFINITY;
    // A rank may hold no KV (dense's other ranks): nothing to compare, and no empty copies.
    if (a.tokens() == 0) return 0;
    float worst = 0;
    const int64_t n = a.tokens() * a.row_elements();
    std::vector<float> fa(static_cast<size_t>(n)), fb(static_cast<size_t>(n));
    for (int64_t l = 0; l < a.n_layers(); ++l) {
      for (const auto& [x, y] : {std::pair{a.keys(l), b.keys(l)}, std::pair{a.values(l), b.values(l)}}) {
        decode_kv(x.dtype, x.data, n, fa.data());
        decode_kv(y.dtype, y.data, n, fb.data());
        for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(fa[i] - fb[i]));
      }
    }
    return worst;
  }

  // Every rank of `config`'s plan on `ranks` ranks, chunked by 1, 7 and 64 tokens and by cost (at 4
  // keys per token-equivalent a chunk of 12 token-equivalents holds from 12 rows down to one as its
  // prefix grows over these contexts), against one pass per step.
  static void expect_chunks_equal_one_pass(const AttentionConfig& config, int ranks) {
    const BlockPlan p = plan(config, ranks);
    const ChunkLimit by_cost = ChunkLimit::by_tokens_and_cost(64, 12, 4);
    for (int rank = 0; rank < ranks; ++rank) {
      LoneRank comm(rank, ranks);
      const Encoded whole = encode(p, comm, kNoLimit);
      for (const ChunkLimit& limit : {ChunkLimit(1), ChunkLimit(7), ChunkLimit(64), by_cost}) {
        SCOPED_TRACE("rank " + std::to_string(rank) + ", chunks of " + std::to_string(limit.max_tokens) +
                     " tokens and " + std::to_string(limit.max_cost) + " token-equivalents");
        const Encoded chunked = encode(p, comm, limit);
        EXPECT_EQ(chunked.chunks_run, Phase1Job::chunk_count(p, rank, limit));
        EXPECT_EQ(chunked.stats.shard_tokens, whole.stats.shard_tokens);
        EXPECT_EQ(chunked.stats.shard_bytes, whole.stats.shard_bytes);
        EXPECT_EQ(chunked.stats.tokens_processed, whole.stats.tokens_processed);
        EXPECT_EQ(chunked.progress, whole.progress);
        const float difference = max_kv_difference(cache(chunked), cache(whole));
        EXPECT_LE(difference, kTolerance);
        // Chunks no shorter than the parts they cut: the same calls as one pass per step.
        if (Phase1Job::chunk_count(p, rank, limit) == Phase1Job::chunk_count(p, rank, kNoLimit)) {
          EXPECT_EQ(difference, 0.f);
        }
      }
    }
  }

  // A chunk as long as its step runs the very same calls (bit for bit); shorter chunks cut the
  // matrix products and attention tiles differently, so sums run in another order: the shards
  // then differ by at most 3.3e-6 here (KV entries of order 1). A chunk that missed its block's
  // earlier chunks would differ by more than 1.
  static constexpr float kTolerance = 1e-5f;
  static RuntimeModel* model_;
};

RuntimeModel* Phase1JobTest::model_ = nullptr;

AttentionConfig blocked(const std::string& algorithm, int64_t block_size) {
  AttentionConfig c;
  c.algorithm = algorithm;
  c.block_size = block_size;
  return c;
}

TEST_F(Phase1JobTest, DenseInChunksEqualsOnePass) { expect_chunks_equal_one_pass(blocked("dense", 0), 2); }

TEST_F(Phase1JobTest, StarInChunksEqualsOnePass) { expect_chunks_equal_one_pass(blocked("star", 20), 3); }

TEST_F(Phase1JobTest, StarWithAQuarterBlockAnchorInChunksEqualsOnePass) {
  AttentionConfig c = blocked("star", 20);
  c.anchor_size = 5;
  expect_chunks_equal_one_pass(c, 3);
}

TEST_F(Phase1JobTest, NoAnchorInChunksEqualsOnePass) { expect_chunks_equal_one_pass(blocked("no-anchor", 20), 3); }

TEST_F(Phase1JobTest, PulsarInChunksEqualsOnePass) {
  AttentionConfig c = blocked("pulsar", 24);
  c.sink_tokens = 6;
  c.chunk_tokens = 4;
  expect_chunks_equal_one_pass(c, 2);
  c.keep_prefix_kv = true;
  expect_chunks_equal_one_pass(c, 2);
}

TEST_F(Phase1JobTest, StreamingInChunksEqualsOnePass) {
  AttentionConfig c = blocked("streaming", 0);
  c.streaming_sink = 4;
  c.streaming_window = 16;  // binds: most of the 150 tokens see a window, not the whole context
  expect_chunks_equal_one_pass(c, 1);
}

TEST_F(Phase1JobTest, BoundaryOverlapLeadsInChunksEqualOnePass) {
  for (const std::string algorithm : {"star", "no-anchor", "pulsar"}) {
    SCOPED_TRACE(algorithm);
    AttentionConfig c = blocked(algorithm, 20);
    c.anchor_size = 4;
    c.sink_tokens = 4;
    c.chunk_tokens = 4;
    c.boundary_overlap = 9;  // more than one chunk of 7: the lead itself runs in chunks
    expect_chunks_equal_one_pass(c, 3);
  }
}

// Ring is never split: one chunk of the whole segment whatever the limit, equal to one pass.
TEST_F(Phase1JobTest, RingSegmentIsOneChunk) {
  const BlockPlan p = plan(blocked("ring", 0), 1);
  SelfCommunicator comm;
  const Encoded whole = encode(p, comm, kNoLimit);
  for (int64_t limit : {int64_t{1}, int64_t{7}}) {
    EXPECT_EQ(Phase1Job::chunk_count(p, 0, limit), 1);
    const Encoded chunked = encode(p, comm, limit);
    EXPECT_EQ(chunked.chunks_run, 1);
    EXPECT_EQ(max_kv_difference(cache(chunked), cache(whole)), 0.f);
  }
}

// The counts every rank computes for every rank, by hand: star on 3 ranks with blocks of 20 over
// 150 tokens (blocks 0..7: rank 0 holds 0 and 1, rank 1 blocks 2..4, rank 2 blocks 5..7), anchor 4
// and a lead of 9 (the anchor holds tokens 0..3, so block 1's lead is tokens 11..19).
TEST_F(Phase1JobTest, ChunkCountFollowsThePlan) {
  AttentionConfig c = blocked("star", 20);
  c.anchor_size = 4;
  c.boundary_overlap = 9;
  const BlockPlan p = plan(c, 3);
  ASSERT_EQ(p.blocks.size(), 8u);
  ASSERT_EQ(p.ranks[0].steps.size(), 3u);  // block 0, the anchor, block 1
  ASSERT_EQ(p.ranks[2].steps.size(), 4u);  // the anchor, blocks 5, 6 and 7 (10 tokens)
  EXPECT_EQ(Phase1Job::chunk_count(p, 0, 0), 1 + 1 + 2);
  EXPECT_EQ(Phase1Job::chunk_count(p, 0, 64), 1 + 1 + 2);
  EXPECT_EQ(Phase1Job::chunk_count(p, 0, 7), 3 + 1 + (2 + 3));
  EXPECT_EQ(Phase1Job::chunk_count(p, 2, 7), 1 + (2 + 3) + (2 + 3) + (2 + 2));
  EXPECT_EQ(Phase1Job::chunk_count(p, 2, 1), 4 + (9 + 20) + (9 + 20) + (9 + 10));
  // By cost, 12 token-equivalents at 4 keys each: rows r whose first attends k keys cost
  // r + (k+1 + ... + k+r) / 4. Rank 0's block 0 (no prefix) runs as 6, 3, 3, 2, 2, 2, 2 rows; the
  // anchor as one chunk of 4; a lead after the 4-token anchor as 4, 3, 2; a body after anchor and
  // lead (13 keys) as 2, 2, 2 and then single rows (2 rows from 19 keys cost 12.25).
  const ChunkLimit by_cost = ChunkLimit::by_tokens_and_cost(64, 12, 4);
  EXPECT_EQ(Phase1Job::chunk_count(p, 0, by_cost), 7 + 1 + (3 + 17));
  EXPECT_EQ(Phase1Job::chunk_count(p, 2, by_cost), 1 + (3 + 17) + (3 + 17) + (3 + 7));
}

// RocketKV's window: the last W rows of the query host's last block, gathered across the chunks
// they fall in (W = 12 spans two chunks of 7; W = 100 is more than the block).
TEST_F(Phase1JobTest, RocketWindowIsRecordedAcrossChunks) {
  const BlockPlan p = plan(blocked("star", 20), 3);
  LoneRank host(p.query_host, 3);
  for (int64_t rows : {int64_t{12}, int64_t{100}}) {
    const Encoded whole = encode(p, host, kNoLimit, rows);
    ASSERT_EQ(whole.window.rows, std::min<int64_t>(rows, p.blocks.back().size()));
    for (int64_t limit : {int64_t{1}, int64_t{7}, int64_t{64}}) {
      SCOPED_TRACE("W " + std::to_string(rows) + ", chunks of " + std::to_string(limit));
      const Encoded chunked = encode(p, host, limit, rows);
      EXPECT_EQ(chunked.window.rows, whole.window.rows);
      EXPECT_EQ(chunked.window.context_rows, whole.window.rows);
      EXPECT_EQ(chunked.window.q_floats, whole.window.q_floats);
      ASSERT_EQ(chunked.window.q.size(), whole.window.q.size());
      float worst = 0;
      for (size_t i = 0; i < whole.window.q.size(); ++i) {
        worst = std::max(worst, std::abs(chunked.window.q[i] - whole.window.q[i]));
      }
      EXPECT_LE(worst, kTolerance);
    }
  }
  // Another rank records nothing.
  LoneRank other(0, 3);
  const Encoded elsewhere = encode(p, other, 7, 12);
  EXPECT_EQ(elsewhere.window.rows, 0);
}

TEST_F(Phase1JobTest, MisuseIsRefused) {
  const BlockPlan p = plan(blocked("star", 20), 1);
  SelfCommunicator comm;
  auto shard = engine().new_shard(0);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(Phase1Job::start(engine(), p, comm, **shard, 0.0, {}, -1).status().code(), StatusCode::kInvalidArgument);
  for (const ChunkLimit& bad : {ChunkLimit::by_tokens_and_cost(7, -1, 4), ChunkLimit::by_tokens_and_cost(7, 12, 0)}) {
    EXPECT_EQ(Phase1Job::start(engine(), p, comm, **shard, 0.0, {}, bad).status().code(), StatusCode::kInvalidArgument);
  }
  LoneRank two(0, 2);
  EXPECT_EQ(Phase1Job::start(engine(), p, two, **shard, 0.0, {}, 7).status().code(), StatusCode::kInvalidArgument);

  auto job = Phase1Job::start(engine(), p, comm, **shard, 0.0, {}, 7);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ((*job)->finish_chunk().code(), StatusCode::kFailedPrecondition);  // no chunk handed out
  ASSERT_TRUE((*job)->next_chunk().ok());
  EXPECT_EQ((*job)->next_chunk().status().code(), StatusCode::kFailedPrecondition);  // previous unfinished
}

// A plan with nothing for this rank is done at once and reports an empty shard.
TEST_F(Phase1JobTest, ARankWithoutStepsIsDoneAtStart) {
  const BlockPlan p = plan(blocked("dense", 0), 2);
  LoneRank second(1, 2);
  auto shard = engine().new_shard(0);
  ASSERT_TRUE(shard.ok());
  auto job = Phase1Job::start(engine(), p, second, **shard, 0.0, {}, 7);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_TRUE((*job)->done());
  EXPECT_EQ((*job)->stats().shard_tokens, 0);
  EXPECT_EQ((*job)->next_chunk().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace star
