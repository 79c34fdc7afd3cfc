// Issue 16, must-show 1 on 1–4 ranks: continuous batching does not change answers. 24 requests of
// mixed context lengths, algorithms (dense, star, no-anchor, pulsar, streaming, one RocketKV),
// greedy and seeded sampling and max_tokens, some reading one kept context, most admitted together
// and some mid-run, give every request the tokens it gets alone through the same StepEngine, token
// for token, also with the own tokens of those that allow it kept on other ranks than their query
// hosts in the batch; and Phase 1 in chunks interleaved with decoding gives the tokens of whole blocks.
#include <gtest/gtest.h>

#include <map>

#include "star/attention/plan_builder.h"
#include "star/engine/step_engine.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"
#include "support/step_schedule.h"

namespace star {
namespace {

using testing::RequestRecord;
using testing::ScheduledRequest;

class StepEngineBatching : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::SharedModelDir("--preset tiny --seed 7 --heads 8 --kv-heads 2 --max-positions 4096");
    ASSERT_TRUE(dir_->ok());
    auto m = open_model(dir_->path());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  int64_t vocab() const { return std::min<int64_t>(model_->llama->config().vocab_size, 250); }

  // The shared context, kept as "shared" by a context-only sequence (id 100).
  void keep_shared_context(StepEngine& engine) {
    std::mt19937 rng(5);
    ScheduledRequest create;
    create.spec.id = 100;
    create.spec.context_ids = testing::random_tokens(rng, 120, vocab());
    create.spec.attention.algorithm = "star";
    create.spec.keep_as = "shared";
    std::map<int64_t, RequestRecord> r = testing::run_schedule(engine, comm_, {create});
    EXPECT_TRUE(r[100].error.ok()) << r[100].error.to_string();
    ASSERT_NE(engine.context("shared"), nullptr);
  }

  // spread_own: each request whose own tokens may leave its query host (own_tokens_movable) keeps
  // them on rank id % ranks, as rank 0's scheduler may place them.
  std::vector<ScheduledRequest> mixed_schedule(bool spread_own = false) {
    std::vector<ScheduledRequest> schedule;
    for (SequenceSpec& spec : testing::mixed_requests(24, vocab(), "shared", /*with_rocket=*/true)) {
      // 16 together, then 4 at step 3 and 4 at step 8, while the first ones decode.
      const int64_t at = spec.id <= 16 ? 0 : spec.id <= 20 ? 3 : 8;
      if (spread_own && movable(spec)) spec.own_host = static_cast<int>(spec.id % comm_.size());
      schedule.push_back({std::move(spec), at});
    }
    return schedule;
  }

  bool movable(const SequenceSpec& spec) const {
    if (!spec.context_id.empty()) return true;  // the kept star context: a block on every rank
    Result<BlockPlan> plan = build_block_plan(spec.context_ids, comm_.size(), spec.attention, {});
    return plan.ok() && own_tokens_movable(*plan, spec.attention);
  }

  // Whether an inline context's own tokens sit off its query host (kept-context ones not counted).
  bool moved_off_query_host(const SequenceSpec& spec) const {
    if (spec.own_host < 0 || !spec.context_id.empty()) return false;
    Result<BlockPlan> plan = build_block_plan(spec.context_ids, comm_.size(), spec.attention, {});
    return plan.ok() && plan->query_host != spec.own_host;
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  Communicator& comm_ = *world_;
  static testing::SharedModelDir* dir_;
  static RuntimeModel* model_;
};

testing::SharedModelDir* StepEngineBatching::dir_ = nullptr;
RuntimeModel* StepEngineBatching::model_ = nullptr;

TEST_F(StepEngineBatching, TwentyFourMixedRequestsTogetherEqualEachAlone) {
  StepEngine engine(*model_, comm_, StepLimits{.max_num_batched_tokens = 32});
  keep_shared_context(engine);
  const std::vector<ScheduledRequest> schedule = mixed_schedule(/*spread_own=*/true);
  int moved = 0;
  for (const ScheduledRequest& r : schedule) moved += moved_off_query_host(r.spec) ? 1 : 0;
  if (comm_.size() > 1) EXPECT_GE(moved, 4);
  int64_t batched_steps = 0;
  std::map<int64_t, RequestRecord> together = testing::run_schedule(engine, comm_, schedule, &batched_steps);
  int64_t alone_steps = 0;
  for (const ScheduledRequest& r : schedule) {
    SCOPED_TRACE("request " + std::to_string(r.spec.id) + " (" + r.spec.attention.algorithm + ", own_host " +
                 std::to_string(r.spec.own_host) + ")");
    int64_t steps = 0;
    SequenceSpec on_query_host = r.spec;
    on_query_host.own_host = -1;
    std::map<int64_t, RequestRecord> alone = testing::run_schedule(engine, comm_, {{on_query_host, 0}}, &steps);
    alone_steps += steps;
    if (comm_.rank() != 0) continue;
    const RequestRecord &a = alone[r.spec.id], &b = together[r.spec.id];
    ASSERT_TRUE(a.error.ok()) << a.error.to_string();
    ASSERT_TRUE(b.error.ok()) << b.error.to_string();
    ASSERT_TRUE(a.done);
    ASSERT_FALSE(a.tokens.empty());
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.is_stop, a.is_stop);
    EXPECT_EQ(b.done, a.done);
    EXPECT_EQ(b.finish_reason, a.finish_reason);
    EXPECT_LE(static_cast<int64_t>(a.tokens.size()), r.spec.generation.max_tokens);
  }
  // Batching did batch: far fewer steps together than one after another.
  EXPECT_LT(batched_steps * 2, alone_steps);
  EXPECT_TRUE(engine.idle());
}

// Steps where every row is greedy send the ranks' slice candidates instead of the logits: many
// greedy sequences decoding together, some with their own tokens off the query host, get each the
// tokens it gets alone.
TEST_F(StepEngineBatching, GreedySequencesTogetherEqualEachAlone) {
  StepEngine engine(*model_, comm_, StepLimits{.max_num_batched_tokens = 32});
  keep_shared_context(engine);
  std::vector<ScheduledRequest> schedule;
  for (ScheduledRequest& r : mixed_schedule(/*spread_own=*/true)) {
    if (r.spec.generation.sampling.temperature != 0.f || r.spec.attention.sparse.algorithm == "rocket") continue;
    r.admit_at_step = 0;
    schedule.push_back(std::move(r));
  }
  ASSERT_GE(schedule.size(), 8u);
  std::map<int64_t, RequestRecord> together = testing::run_schedule(engine, comm_, schedule);
  for (const ScheduledRequest& r : schedule) {
    SCOPED_TRACE("request " + std::to_string(r.spec.id) + " (" + r.spec.attention.algorithm + ")");
    SequenceSpec on_query_host = r.spec;
    on_query_host.own_host = -1;
    std::map<int64_t, RequestRecord> alone = testing::run_schedule(engine, comm_, {{on_query_host, 0}});
    if (comm_.rank() != 0) continue;
    ASSERT_TRUE(together[r.spec.id].error.ok()) << together[r.spec.id].error.to_string();
    EXPECT_EQ(together[r.spec.id].tokens, alone[r.spec.id].tokens);
    EXPECT_EQ(together[r.spec.id].finish_reason, alone[r.spec.id].finish_reason);
  }
}

// Rank 0 moves own tokens between the ranks while they decode (StepMessage::moved, as the server's
// scheduler does to even out the ranks' loads): every third step each movable sequence's own
// tokens go to another rank, some back where they were. Every answer is the one it gets alone with
// its own tokens on its query host, bit for bit.
TEST_F(StepEngineBatching, OwnTokensMovedWhileDecodingEqualEachAlone) {
  if (comm_.size() == 1) GTEST_SKIP() << "needs a second rank";
  StepEngine engine(*model_, comm_, StepLimits{.max_num_batched_tokens = 32});
  ASSERT_TRUE(engine.moves_own_tokens());
  keep_shared_context(engine);
  const std::vector<ScheduledRequest> schedule = mixed_schedule();
  std::map<int64_t, const SequenceSpec*> specs;
  for (const ScheduledRequest& r : schedule) specs[r.spec.id] = &r.spec;
  // Each step, the moves sent the step before must show in the holders the engine reports.
  std::map<int64_t, int> sent;
  size_t moves_seen = 0;
  std::map<int64_t, RequestRecord> together =
      testing::run_schedule(engine, comm_, schedule, nullptr, [&](int64_t step, StepMessage& next) {
        const OwnTokenLoads loads = engine.own_token_loads();
        for (const OwnTokenLoads::Sequence& s : loads.decoding) {
          auto it = sent.find(s.id);
          if (it == sent.end()) continue;
          EXPECT_EQ(s.host, it->second) << "sequence " << s.id << " at step " << step;
          ++moves_seen;
        }
        sent.clear();
        if (step % 3 != 2) return;
        for (const OwnTokenLoads::Sequence& s : loads.decoding) {
          if (!s.may_move || !movable(*specs.at(s.id))) continue;
          const int to = (s.host + 1 + static_cast<int>(step % 2)) % comm_.size();
          if (to == s.host) continue;
          next.moved.emplace_back(s.id, to);
          sent[s.id] = to;
        }
      });
  if (comm_.rank() == 0) EXPECT_GE(moves_seen, 20u);
  for (const ScheduledRequest& r : schedule) {
    SCOPED_TRACE("request " + std::to_string(r.spec.id) + " (" + r.spec.attention.algorithm + ")");
    std::map<int64_t, RequestRecord> alone = testing::run_schedule(engine, comm_, {{r.spec, 0}});
    if (comm_.rank() != 0) continue;
    const RequestRecord &a = alone[r.spec.id], &b = together[r.spec.id];
    ASSERT_TRUE(a.error.ok()) << a.error.to_string();
    ASSERT_TRUE(b.error.ok()) << b.error.to_string();
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.finish_reason, a.finish_reason);
  }
  EXPECT_TRUE(engine.idle());
}

// Own tokens may leave the query host only beside a plain context: a RocketKV request that names
// another rank fails alone, with the field named, and the engine serves the next request.
TEST_F(StepEngineBatching, OwnTokensOfARocketContextStayOnTheQueryHost) {
  if (comm_.size() == 1) GTEST_SKIP() << "needs a second rank";
  StepEngine engine(*model_, comm_, StepLimits{.max_num_batched_tokens = 32});
  std::vector<SequenceSpec> specs = testing::mixed_requests(24, vocab(), "", /*with_rocket=*/true);
  SequenceSpec rocket = specs[11];
  ASSERT_EQ(rocket.attention.sparse.algorithm, "rocket");
  rocket.own_host = 0;  // star's query host is the last rank
  SequenceSpec plain = specs[1];
  plain.id = 99;
  std::map<int64_t, RequestRecord> r = testing::run_schedule(engine, comm_, {{rocket, 0}, {plain, 0}});
  if (comm_.rank() != 0) return;
  EXPECT_EQ(r[rocket.id].error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r[rocket.id].error.message().find("own_host"), std::string::npos) << r[rocket.id].error.message();
  EXPECT_TRUE(r[99].error.ok()) << r[99].error.to_string();
  EXPECT_TRUE(r[99].done);
  EXPECT_TRUE(engine.idle());
}

TEST_F(StepEngineBatching, ChunkedPhase1InterleavedWithDecodingEqualsWholeBlocks) {
  StepEngine chunked(*model_, comm_, StepLimits{.max_num_batched_tokens = 16});
  StepEngine whole(*model_, comm_, StepLimits{.max_num_batched_tokens = 0});
  keep_shared_context(chunked);
  keep_shared_context(whole);
  const std::vector<ScheduledRequest> schedule = mixed_schedule();
  int64_t chunked_steps = 0, whole_steps = 0;
  std::map<int64_t, RequestRecord> a = testing::run_schedule(chunked, comm_, schedule, &chunked_steps);
  std::map<int64_t, RequestRecord> b = testing::run_schedule(whole, comm_, schedule, &whole_steps);
  EXPECT_GT(chunked_steps, whole_steps);  // the chunks did take steps of their own
  if (comm_.rank() != 0) return;
  for (const ScheduledRequest& r : schedule) {
    SCOPED_TRACE("request " + std::to_string(r.spec.id) + " (" + r.spec.attention.algorithm + ")");
    ASSERT_TRUE(a[r.spec.id].error.ok()) << a[r.spec.id].error.to_string();
    EXPECT_EQ(a[r.spec.id].tokens, b[r.spec.id].tokens);
    EXPECT_EQ(a[r.spec.id].finish_reason, b[r.spec.id].finish_reason);
  }
}

}  // namespace
}  // namespace star
