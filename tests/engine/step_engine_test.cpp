// The StepEngine on one rank (also under ASan): requests batched equal each alone; a bad request
// fails alone and the others go on; a scheduler's broken message fails the step; contexts are
// kept, refused, released and taken back as the messages say; stop ids and max_tokens end a
// sequence at once.
#include <gtest/gtest.h>

#include <map>

#include "star/dist/self_communicator.h"
#include "star/engine/step_engine.h"
#include "star/model/synthetic_model.h"
#include "support/step_schedule.h"
#include "support/temp_dir.h"

namespace star {
namespace {

using testing::RequestRecord;
using testing::ScheduledRequest;

class StepEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::TempDir dir;
    SyntheticModelSpec spec;
    spec.config = *synthetic_preset("tiny");
    spec.seed = 11;
    ASSERT_TRUE(write_synthetic_model(spec, dir.path()).ok());
    Result<RuntimeModel> model = open_model(dir.path());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = new RuntimeModel(std::move(*model));
  }
  static void TearDownTestSuite() { delete model_; }

  int64_t vocab() const { return std::min<int64_t>(model_->llama->config().vocab_size, 250); }

  SequenceSpec context_only(int64_t id, const std::string& keep_as, int64_t tokens) {
    std::mt19937 rng(static_cast<uint32_t>(id));
    SequenceSpec s;
    s.id = id;
    s.context_ids = testing::random_tokens(rng, tokens, vocab());
    s.attention.algorithm = "star";
    s.keep_as = keep_as;
    return s;
  }

  // The same query for every id.
  SequenceSpec on_context(int64_t id, const std::string& context_id, int64_t max_tokens) {
    std::mt19937 rng(77);
    SequenceSpec s;
    s.id = id;
    s.context_id = context_id;
    s.query_ids = testing::random_tokens(rng, 3, vocab());
    s.generation.max_tokens = max_tokens;
    s.generation.ignore_eos = true;
    return s;
  }

  std::map<int64_t, RequestRecord> alone(StepEngine& engine, const SequenceSpec& spec) {
    return testing::run_schedule(engine, self_, {{spec, 0}});
  }

  SelfCommunicator self_;
  static RuntimeModel* model_;
};

RuntimeModel* StepEngineTest::model_ = nullptr;

TEST_F(StepEngineTest, MixedRequestsTogetherEqualEachAlone) {
  StepEngine engine(*model_, self_, StepLimits{.max_num_batched_tokens = 24});
  ASSERT_TRUE(alone(engine, context_only(100, "shared", 90))[100].context_encoded);
  std::vector<ScheduledRequest> schedule;
  for (SequenceSpec& spec : testing::mixed_requests(12, vocab(), "shared", /*with_rocket=*/true)) {
    schedule.push_back({std::move(spec), spec.id <= 8 ? 0 : 4});
  }
  std::map<int64_t, RequestRecord> together = testing::run_schedule(engine, self_, schedule);
  for (const ScheduledRequest& r : schedule) {
    SCOPED_TRACE("request " + std::to_string(r.spec.id) + " (" + r.spec.attention.algorithm + ")");
    RequestRecord a = alone(engine, r.spec)[r.spec.id];
    const RequestRecord& b = together[r.spec.id];
    ASSERT_TRUE(a.error.ok()) << a.error.to_string();
    ASSERT_TRUE(b.error.ok()) << b.error.to_string();
    ASSERT_TRUE(a.done);
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.finish_reason, a.finish_reason);
  }
}

TEST_F(StepEngineTest, BadRequestsFailAloneAndTheOthersGoOn) {
  StepEngine engine(*model_, self_, StepLimits{.max_num_batched_tokens = 16});
  ASSERT_TRUE(alone(engine, context_only(100, "ctx", 40))[100].context_encoded);
  const SequenceSpec good = on_context(1, "ctx", 6);
  const RequestRecord expected = alone(engine, good)[1];

  SequenceSpec bad_token = on_context(2, "ctx", 4);
  bad_token.query_ids[1] = static_cast<int32_t>(model_->llama->config().vocab_size);
  SequenceSpec unknown = on_context(3, "no-such-context", 4);
  SequenceSpec no_tokens = on_context(4, "ctx", 0);
  SequenceSpec bad_plan = context_only(5, "", 30);
  bad_plan.keep_as.clear();
  bad_plan.query_ids = {1};
  bad_plan.attention.algorithm = "no-such-algorithm";
  SequenceSpec bad_sampling = on_context(6, "ctx", 4);
  bad_sampling.generation.sampling.top_p = 0;
  std::map<int64_t, RequestRecord> r = testing::run_schedule(
      engine, self_, {{good, 0}, {bad_token, 0}, {unknown, 0}, {no_tokens, 1}, {bad_plan, 1}, {bad_sampling, 2}});

  EXPECT_EQ(r[1].tokens, expected.tokens);
  EXPECT_TRUE(r[1].done);
  EXPECT_EQ(r[2].error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r[2].error.message().find("query: token id"), std::string::npos) << r[2].error.message();
  EXPECT_EQ(r[3].error.code(), StatusCode::kNotFound);
  EXPECT_NE(r[3].error.message().find("no-such-context"), std::string::npos);
  EXPECT_EQ(r[4].error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r[4].error.message().find("max_tokens"), std::string::npos);
  EXPECT_FALSE(r[5].error.ok());
  EXPECT_EQ(r[6].error.code(), StatusCode::kInvalidArgument);
  for (int64_t id : {2, 3, 4, 5, 6}) EXPECT_TRUE(r[id].tokens.empty()) << id;
  EXPECT_TRUE(engine.idle());
}

TEST_F(StepEngineTest, BrokenMessagesFailTheStep) {
  StepEngine engine(*model_, self_, StepLimits{});
  ASSERT_TRUE(alone(engine, context_only(100, "ctx", 20))[100].context_encoded);
  StepMessage first;
  first.admitted = {on_context(1, "ctx", 5)};
  ASSERT_TRUE(engine.step(first).ok());
  StepMessage twice;
  twice.admitted = {on_context(1, "ctx", 5)};
  Result<std::vector<SequenceEvent>> again = engine.step(twice);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kInternal);

  StepEngine fresh(*model_, self_, StepLimits{});
  ASSERT_TRUE(alone(fresh, context_only(100, "ctx", 20))[100].context_encoded);
  ASSERT_TRUE(fresh.step(first).ok());  // its query runs now: it waits for its token
  StepMessage two_tokens;
  two_tokens.sampled = {{1, 3}};
  ASSERT_TRUE(fresh.step(two_tokens).ok());  // that token runs: it waits again
  ASSERT_TRUE(fresh.step({}).ok());          // nothing sampled: it keeps waiting, no forward
  two_tokens.sampled = {{1, 3}, {1, 4}};
  Result<std::vector<SequenceEvent>> doubled = fresh.step(two_tokens);
  ASSERT_FALSE(doubled.ok());
  EXPECT_EQ(doubled.status().code(), StatusCode::kInternal);

  // One rank has nowhere to move own tokens to: a move is the scheduler's error.
  StepEngine single(*model_, self_, StepLimits{});
  EXPECT_FALSE(single.moves_own_tokens());
  ASSERT_TRUE(alone(single, context_only(100, "ctx", 20))[100].context_encoded);
  ASSERT_TRUE(single.step(first).ok());
  StepMessage move;
  move.moved = {{1, 0}};
  Result<std::vector<SequenceEvent>> moved = single.step(move);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().code(), StatusCode::kInternal);
  EXPECT_NE(moved.status().message().find("cannot"), std::string::npos) << moved.status().message();
}

TEST_F(StepEngineTest, StopIdsAndMaxTokensEndASequenceAtOnce) {
  StepEngine engine(*model_, self_, StepLimits{});
  ASSERT_TRUE(alone(engine, context_only(100, "ctx", 30))[100].context_encoded);
  const RequestRecord free_run = alone(engine, on_context(1, "ctx", 8))[1];
  ASSERT_EQ(free_run.tokens.size(), 8u);
  EXPECT_EQ(free_run.finish_reason, FinishReason::kLength);
  EXPECT_EQ(std::count(free_run.is_stop.begin(), free_run.is_stop.end(), true), 0);

  // The third greedy token as a stop id: the answer ends with it, flagged.
  SequenceSpec stopping = on_context(2, "ctx", 8);
  stopping.generation.stop_token_ids = {free_run.tokens[2]};
  const RequestRecord stopped = alone(engine, stopping)[2];
  const auto first_hit = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[2]);
  const size_t expected_length = static_cast<size_t>(first_hit - free_run.tokens.begin()) + 1;
  ASSERT_EQ(stopped.tokens.size(), expected_length);
  EXPECT_TRUE(std::equal(stopped.tokens.begin(), stopped.tokens.end(), free_run.tokens.begin()));
  EXPECT_TRUE(stopped.is_stop.back());
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
  EXPECT_TRUE(engine.idle());
}

TEST_F(StepEngineTest, ContextsAreKeptReleasedAndTakenAsTold) {
  StepEngine engine(*model_, self_, StepLimits{.max_num_batched_tokens = 8});
  // Encoded, but rank 0 does not keep it: gone.
  StepMessage create;
  create.admitted = {context_only(100, "dropped", 30)};
  bool encoded = false;
  for (int step = 0; step < 100 && !encoded; ++step) {
    Result<std::vector<SequenceEvent>> events = engine.step(step == 0 ? create : StepMessage{});
    ASSERT_TRUE(events.ok()) << events.status().to_string();
    for (const SequenceEvent& e : *events) {
      if (e.kind != SequenceEvent::Kind::kContextEncoded) continue;
      encoded = true;
      ASSERT_NE(e.context, nullptr);
      EXPECT_EQ(e.context->context_tokens, 30);
      EXPECT_EQ(e.context->shard_tokens.size(), 1u);
    }
  }
  ASSERT_TRUE(encoded);
  EXPECT_FALSE(engine.idle());  // waiting for the keep decision
  ASSERT_TRUE(engine.step({}).ok());
  EXPECT_EQ(engine.context("dropped"), nullptr);
  EXPECT_TRUE(engine.idle());

  ASSERT_TRUE(alone(engine, context_only(101, "kept", 30))[101].context_encoded);
  ASSERT_NE(engine.context("kept"), nullptr);
  const RequestRecord expected = alone(engine, on_context(1, "kept", 6))[1];
  // A second context under the same id is refused.
  EXPECT_EQ(alone(engine, context_only(102, "kept", 10))[102].error.code(), StatusCode::kInvalidArgument);

  // Released while a sequence reads it: the sequence finishes as it would have; then it is gone.
  StepMessage start;
  start.admitted = {on_context(2, "kept", 6)};
  Result<std::vector<SequenceEvent>> events = engine.step(start);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(engine.take_context("kept").status().code(), StatusCode::kFailedPrecondition);
  StepMessage release;
  release.release = {"kept"};
  std::vector<int32_t> tokens;
  for (int step = 0; step < 20 && !engine.idle(); ++step) {
    StepMessage next = step == 0 ? release : StepMessage{};
    for (const SequenceEvent& e : *events) {
      if (e.kind == SequenceEvent::Kind::kToken) {
        tokens.push_back(e.token);
        next.sampled.emplace_back(e.id, e.token);
      }
    }
    events = engine.step(next);
    ASSERT_TRUE(events.ok()) << events.status().to_string();
  }
  EXPECT_EQ(tokens, expected.tokens);
  EXPECT_EQ(engine.context("kept"), nullptr);
  EXPECT_EQ(engine.take_context("kept").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(alone(engine, context_only(103, "taken", 12))[103].context_encoded);
  Result<std::unique_ptr<EncodedContext>> taken = engine.take_context("taken");
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_EQ((*taken)->context_tokens, 12);
  EXPECT_EQ((*taken)->shard->tokens(), 12);
  EXPECT_EQ(engine.context("taken"), nullptr);
}

TEST_F(StepEngineTest, FinishedDropsASequenceMidAnswer) {
  StepEngine engine(*model_, self_, StepLimits{});
  ASSERT_TRUE(alone(engine, context_only(100, "ctx", 20))[100].context_encoded);
  StepMessage start;
  start.admitted = {on_context(1, "ctx", 50), on_context(2, "ctx", 3)};
  Result<std::vector<SequenceEvent>> events = engine.step(start);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(engine.running(), 2);
  StepMessage cancel;
  cancel.finished = {1};
  for (const SequenceEvent& e : *events) {
    if (e.kind == SequenceEvent::Kind::kToken) cancel.sampled.emplace_back(e.id, e.token);
  }
  ASSERT_TRUE(engine.step(cancel).ok());
  EXPECT_EQ(engine.running(), 1);
  EXPECT_EQ(engine.stats(1), nullptr);
  ASSERT_NE(engine.stats(2), nullptr);
}

}  // namespace
}  // namespace star
