// BatchScheduler's admission policy, step by step against hand-worked budgets: the sequence limit,
// the per-rank KV budget, first-in-first-out order, refusals and reservations freed at the end,
// where the requests' own tokens go, and where they move to while they run.
#include "star/server/batch_scheduler.h"

#include <gtest/gtest.h>

namespace star::server {
namespace {

using Kind = BatchScheduler::Verdict::Kind;

std::vector<Kind> kinds(const std::vector<BatchScheduler::Verdict>& verdicts) {
  std::vector<Kind> out;
  for (const auto& v : verdicts) out.push_back(v.kind);
  return out;
}

SchedulerLimits limits(int64_t max_num_seqs, int64_t kv_cache_bytes) {
  SchedulerLimits l;
  l.max_num_seqs = max_num_seqs;
  l.kv_cache_bytes = kv_cache_bytes;
  return l;
}

TEST(BatchScheduler, StartsRequestsUpToTheSequenceLimit) {
  BatchScheduler scheduler(limits(3, 0), 2);
  scheduler.start(1, {10, 10});
  const std::vector<std::vector<int64_t>> waiting = {{1, 1}, {1, 1}, {1, 1}};
  EXPECT_EQ(kinds(scheduler.decide(waiting)), (std::vector<Kind>{Kind::kStart, Kind::kStart, Kind::kWait}));
  EXPECT_EQ(scheduler.running(), 1) << "decide() only decides";
}

TEST(BatchScheduler, EveryRankMustFitAndTheQueueKeepsItsOrder) {
  // Budget 100 per rank; 60 on rank 1 already reserved.
  BatchScheduler scheduler(limits(256, 100), 2);
  scheduler.start(7, {0, 60});
  const std::vector<std::vector<int64_t>> waiting = {
      {30, 30},  // fits: rank 1 reaches 90
      {50, 20},  // rank 1 would reach 110: waits
      {1, 1},    // fits alone, but waits behind the one before it
  };
  EXPECT_EQ(kinds(scheduler.decide(waiting)), (std::vector<Kind>{Kind::kStart, Kind::kWait, Kind::kWait}));

  scheduler.start(8, waiting[0]);
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{30, 90}));
  scheduler.finish(7);
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{30, 30}));
  const std::vector<std::vector<int64_t>> rest(waiting.begin() + 1, waiting.end());
  EXPECT_EQ(kinds(scheduler.decide(rest)), (std::vector<Kind>{Kind::kStart, Kind::kStart}))
      << "rank 1: 30 + 20 + 1 <= 100 once request 7 ended";
}

TEST(BatchScheduler, ARequestAtTheBudgetFitsAndOnePastIsRefusedWithoutBlockingTheQueue) {
  BatchScheduler scheduler(limits(256, 100), 2);
  const std::vector<std::vector<int64_t>> waiting = {{0, 101}, {100, 0}, {0, 100}};
  const std::vector<BatchScheduler::Verdict> verdicts = scheduler.decide(waiting);
  EXPECT_EQ(kinds(verdicts), (std::vector<Kind>{Kind::kRefuse, Kind::kStart, Kind::kStart}));
  EXPECT_EQ(verdicts[0].refusal.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(verdicts[0].refusal.message(),
            "request: the request's KV needs 101 bytes on rank 1, more than the 100 bytes per rank that running "
            "requests may reserve (--kv-cache-bytes)");
}

TEST(BatchScheduler, NoByteLimitCountsSequencesOnly) {
  BatchScheduler scheduler(limits(2, 0), 1);
  const std::vector<std::vector<int64_t>> waiting = {{int64_t{1} << 60}, {int64_t{1} << 60}, {1}};
  EXPECT_EQ(kinds(scheduler.decide(waiting)), (std::vector<Kind>{Kind::kStart, Kind::kStart, Kind::kWait}));
  EXPECT_TRUE(check_fits_kv_cache("x", waiting[0], limits(2, 0)).ok());
}

TEST(BatchScheduler, FinishingFreesExactlyWhatStartReservedOnce) {
  BatchScheduler scheduler(limits(4, 50), 3);
  scheduler.start(1, {10, 20, 30});
  scheduler.start(2, {5, 5, 5});
  scheduler.start(2, {1, 2, 3});  // a restart under the same id replaces, never adds up
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{11, 22, 33}));
  scheduler.finish(1);
  scheduler.finish(1);
  scheduler.finish(99);
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(scheduler.running(), 1);
}

std::vector<int> own_ranks(const std::vector<BatchScheduler::Verdict>& verdicts) {
  std::vector<int> out;
  for (const auto& v : verdicts) out.push_back(v.own_rank);
  return out;
}

// Streams on one context (query host 1): movable own tokens alternate between the ranks, each to
// the one with the fewest own-token bytes, the query host on ties; the reservation follows them.
TEST(BatchScheduler, OwnTokensGoToTheRankWithTheFewestOwnBytes) {
  BatchScheduler scheduler(limits(8, 0), 2);
  const std::vector<std::vector<int64_t>> waiting(4, {0, 10});
  const std::vector<OwnTokens> own(4, {.query_host = 1, .bytes = 10, .movable = true});
  const std::vector<BatchScheduler::Verdict> verdicts = scheduler.decide(waiting, own);
  EXPECT_EQ(own_ranks(verdicts), (std::vector<int>{1, 0, 1, 0}));
  EXPECT_EQ(verdicts[0].rank_bytes, (std::vector<int64_t>{0, 10}));
  EXPECT_EQ(verdicts[1].rank_bytes, (std::vector<int64_t>{10, 0}));
  for (size_t i = 0; i < verdicts.size(); ++i) {
    scheduler.start(static_cast<int64_t>(i), verdicts[i].rank_bytes, verdicts[i].own_rank, own[i].bytes);
  }
  EXPECT_EQ(scheduler.own_bytes(), (std::vector<int64_t>{20, 20}));
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{20, 20}));
  scheduler.finish(1);
  scheduler.finish(3);
  EXPECT_EQ(scheduler.own_bytes(), (std::vector<int64_t>{0, 20}));
  // Rank 0 is emptier now: the next movable one goes there; one that may not move stays.
  const std::vector<OwnTokens> next{{.query_host = 1, .bytes = 10, .movable = false},
                                    {.query_host = 1, .bytes = 10, .movable = true}};
  EXPECT_EQ(own_ranks(scheduler.decide(std::vector<std::vector<int64_t>>(2, {0, 10}), next)), (std::vector<int>{1, 0}));
  // Without own tokens given, nothing is placed.
  EXPECT_EQ(own_ranks(scheduler.decide(std::vector<std::vector<int64_t>>(1, {0, 10}))), (std::vector<int>{-1}));
}

// The own tokens move only where the moved reservation fits the rank's budget.
TEST(BatchScheduler, OwnTokensMoveOnlyWhereTheyFit) {
  BatchScheduler scheduler(limits(8, 100), 3);
  scheduler.start(1, {95, 0, 40}, 2, 40);  // rank 0 nearly full of a context, rank 2 with 40 own bytes
  const std::vector<BatchScheduler::Verdict> verdicts =
      scheduler.decide(std::vector<std::vector<int64_t>>(1, {0, 0, 10}), std::vector<OwnTokens>{{2, 10, true}});
  ASSERT_EQ(verdicts[0].kind, Kind::kStart);
  EXPECT_EQ(verdicts[0].own_rank, 1) << "rank 0 has no room; rank 1 has the fewest own bytes";
  EXPECT_EQ(verdicts[0].rank_bytes, (std::vector<int64_t>{0, 10, 0}));
}

using OwnLoad = BatchScheduler::OwnLoad;

std::vector<std::pair<int64_t, int>> moves_of(const std::vector<BatchScheduler::OwnMove>& moves) {
  std::vector<std::pair<int64_t, int>> out;
  for (const BatchScheduler::OwnMove& m : moves) out.emplace_back(m.id, m.rank);
  return out;
}

// Four streams, own tokens two on each rank (10 own bytes each, 1 a context on both ranks).
BatchScheduler four_streams(int64_t kv_cache_bytes = 0) {
  BatchScheduler scheduler(limits(8, kv_cache_bytes), 2);
  for (int64_t id = 1; id <= 4; ++id) {
    const int own_rank = id <= 2 ? 0 : 1;
    scheduler.start(id, {1 + (own_rank == 0 ? 10 : 0), 1 + (own_rank == 1 ? 10 : 0)}, own_rank, 10, /*movable=*/true);
  }
  return scheduler;
}

TEST(BatchScheduler, WhileAPhase1RunsOnOneRankTheOtherTakesTheOwnTokens) {
  BatchScheduler scheduler = four_streams();
  const std::vector<OwnLoad> own = {{1, 0, 0.5}, {2, 0, 0.5}, {3, 1, 0.5}, {4, 1, 0.5}};
  // Rank 1 runs chunks of cost 25 for 1,000 more steps; rank 0 has none left.
  const std::vector<BatchScheduler::OwnMove> moves = scheduler.own_moves(std::vector<double>{0, 25}, 1000, own);
  EXPECT_EQ(moves_of(moves), (std::vector<std::pair<int64_t, int>>{{3, 0}, {4, 0}}));
  for (const BatchScheduler::OwnMove& m : moves) scheduler.move_own(m.id, m.rank);
  EXPECT_EQ(scheduler.own_bytes(), (std::vector<int64_t>{40, 0}));
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{44, 4}));

  // The Phase 1 over: they spread again, two and two, and then stay.
  const std::vector<OwnLoad> after = {{1, 0, 0.6}, {2, 0, 0.6}, {3, 0, 0.6}, {4, 0, 0.6}};
  const std::vector<BatchScheduler::OwnMove> back = scheduler.own_moves(std::vector<double>{0, 0}, 0, after);
  ASSERT_EQ(back.size(), 2u);
  for (const BatchScheduler::OwnMove& m : back) {
    EXPECT_EQ(m.rank, 1);
    scheduler.move_own(m.id, m.rank);
  }
  EXPECT_EQ(scheduler.own_bytes(), (std::vector<int64_t>{20, 20}));
  std::vector<OwnLoad> spread = after;
  for (OwnLoad& o : spread) {
    for (const BatchScheduler::OwnMove& m : back) {
      if (m.id == o.id) o.rank = m.rank;
    }
  }
  EXPECT_TRUE(scheduler.own_moves(std::vector<double>{0, 0}, 0, spread).empty()) << "equal loads stay put";

  for (int64_t id = 1; id <= 4; ++id) scheduler.finish(id);
  EXPECT_EQ(scheduler.reserved_bytes(), (std::vector<int64_t>{0, 0})) << "each move took its reservation along";
  EXPECT_EQ(scheduler.own_bytes(), (std::vector<int64_t>{0, 0}));
}

TEST(BatchScheduler, NoMovesNearAPhase1sEndNorWhereEveryRankRunsChunks) {
  BatchScheduler scheduler = four_streams();
  const std::vector<OwnLoad> own = {{1, 0, 0.5}, {2, 0, 0.5}, {3, 1, 0.5}, {4, 1, 0.5}};
  EXPECT_TRUE(scheduler.own_moves(std::vector<double>{0, 25}, BatchScheduler::kMinStepsToMove - 1, own).empty());
  EXPECT_TRUE(scheduler.own_moves(std::vector<double>{25, 25}, 1000, own).empty());
  EXPECT_EQ(scheduler.own_moves(std::vector<double>{0, 25}, BatchScheduler::kMinStepsToMove, own).size(), 2u);
}

TEST(BatchScheduler, OwnTokensMoveNeitherPastTheOtherRankNorWhereTheyDoNotFitNorWhenPinned) {
  // A move that would leave rank 0 busier than rank 1 is not made: loads 0 and 1.5 (one stream of
  // 1.0 and one of 0.5 on rank 1) move only the 0.5 one.
  BatchScheduler uneven = four_streams();
  EXPECT_EQ(moves_of(uneven.own_moves(std::vector<double>{0, 0}, 0, std::vector<OwnLoad>{{3, 1, 1.0}, {4, 1, 0.5}})),
            (std::vector<std::pair<int64_t, int>>{{4, 0}}));

  // Budget 25 a rank: each holds 24, so 10 more own bytes fit on neither.
  BatchScheduler full = four_streams(25);
  const std::vector<OwnLoad> own = {{1, 0, 0.5}, {2, 0, 0.5}, {3, 1, 0.5}, {4, 1, 0.5}};
  EXPECT_TRUE(full.own_moves(std::vector<double>{0, 25}, 1000, own).empty());

  // Started as not movable (their context needs them on the query host): they stay.
  BatchScheduler pinned(limits(8, 0), 2);
  pinned.start(1, {1, 11}, 1, 10, /*movable=*/false);
  EXPECT_TRUE(pinned.own_moves(std::vector<double>{0, 25}, 1000, std::vector<OwnLoad>{{1, 1, 0.5}}).empty());
  // Nor does a sequence the scheduler does not run, or one reported on another rank than recorded.
  EXPECT_TRUE(pinned.own_moves(std::vector<double>{0, 25}, 1000, std::vector<OwnLoad>{{7, 1, 0.5}}).empty());
  BatchScheduler moved = four_streams();
  EXPECT_TRUE(moved.own_moves(std::vector<double>{0, 25}, 1000, std::vector<OwnLoad>{{1, 1, 0.5}}).empty());
}

TEST(BatchScheduler, OnlyRunningOwnTokensWeighAndThoseThatMayNotMoveStillWeigh) {
  // Sequence 9 ended (the scheduler finished it) though the engine still reports it this step: its
  // load must not pull sequence 3 over, only to send it back next step.
  BatchScheduler ended = four_streams();
  ended.start(9, {0, 11}, 1, 10, /*movable=*/true);
  ended.finish(9);
  EXPECT_TRUE(ended.own_moves(std::vector<double>{0, 0}, 0,
                              std::vector<OwnLoad>{{1, 0, 0.4}, {2, 0, 0.4}, {3, 1, 0.4}, {4, 1, 0.4}, {9, 1, 10.0}})
                  .empty());

  // A pinned sequence's attention loads its rank all the same: rank 0 (2.0, pinned) is the busier,
  // so rank 1's movable ones stay.
  BatchScheduler pinned(limits(8, 0), 2);
  pinned.start(1, {11, 1}, 0, 10, /*movable=*/false);
  pinned.start(2, {1, 11}, 1, 10, /*movable=*/true);
  pinned.start(3, {1, 11}, 1, 10, /*movable=*/true);
  EXPECT_TRUE(
      pinned.own_moves(std::vector<double>{0, 0}, 0, std::vector<OwnLoad>{{1, 0, 2.0}, {2, 1, 0.5}, {3, 1, 0.5}})
          .empty());

  // The engine's word counts too: may_move false stays.
  BatchScheduler told = four_streams();
  EXPECT_TRUE(told.own_moves(std::vector<double>{0, 25}, 1000,
                             std::vector<OwnLoad>{{3, 1, 0.5, false}, {4, 1, 0.5, false}})
                  .empty());
}

TEST(BatchScheduler, OnThreeRanksTheBusiestRankWithSomethingToGiveGives) {
  // Rank 0 is the busiest but holds only a pinned sequence; rank 1 gives to rank 2.
  BatchScheduler scheduler(limits(8, 0), 3);
  scheduler.start(1, {11, 1, 1}, 0, 10, /*movable=*/false);
  scheduler.start(2, {1, 11, 1}, 1, 10, /*movable=*/true);
  scheduler.start(3, {1, 11, 1}, 1, 10, /*movable=*/true);
  const std::vector<OwnLoad> own = {{1, 0, 3.0}, {2, 1, 1.0}, {3, 1, 1.0}};
  EXPECT_EQ(moves_of(scheduler.own_moves(std::vector<double>{0, 0, 0}, 0, own)),
            (std::vector<std::pair<int64_t, int>>{{2, 2}}));
}

}  // namespace
}  // namespace star::server
