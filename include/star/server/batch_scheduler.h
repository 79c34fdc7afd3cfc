// BatchScheduler: rank 0's admission policy for continuous batching, as pure bookkeeping (no
// threads, no MPI). Each engine step the engine loop shows it the waiting requests' KV needs, front
// of the queue first, and it says which start now: while fewer than max_num_seqs run and, on every
// rank, the bytes reserved by the running requests plus the newcomer's stay within kv_cache_bytes.
// Like vLLM's scheduler it keeps the queue's order: the first request that does not fit waits, and
// every one behind it waits too, so a large request is never starved by small ones passing it. A
// request that could not fit even alone is refused (RESOURCE_EXHAUSTED) instead of blocking the
// queue forever. It also places each request's own tokens (its query's and answer's KV, which one
// rank keeps and attends): on the rank with the fewest own-token bytes where the request allows it
// (own_tokens_movable), so that many streams on one context share that work instead of its query
// host doing all of it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "star/common/status.h"
#include "star/server/server_options.h"

namespace star::server {

// RESOURCE_EXHAUSTED when `rank_bytes` exceed kv_cache_bytes on some rank (the message starts with
// `field`, names the rank, both sizes and --kv-cache-bytes); ok when they fit or there is no limit.
Status check_fits_kv_cache(const char* field, std::span<const int64_t> rank_bytes, const SchedulerLimits& limits);

// A request's own tokens: `bytes` of its reservation, counted on query_host, which may go to
// another rank where `movable`.
struct OwnTokens {
  int query_host = 0;
  int64_t bytes = 0;
  bool movable = false;
};

class BatchScheduler {
 public:
  BatchScheduler(const SchedulerLimits& limits, int ranks);

  struct Verdict {
    enum class Kind { kStart, kWait, kRefuse };
    Kind kind = Kind::kWait;
    Status refusal;                   // kRefuse
    std::vector<int64_t> rank_bytes;  // kStart: the reservation, with the own bytes on own_rank
    int own_rank = -1;                // kStart: the rank given the own tokens (-1: none)
  };
  // One verdict per waiting request (its KV bytes per rank and, where given, its own tokens), in
  // the same order. A movable request's own tokens go to the rank with the fewest own-token bytes
  // of the running requests and those started before it, where its reservation fits; ties keep
  // the query host, then the lower rank. A request is refused by its bytes as given (own tokens on
  // the query host), even where moving them would let it fit. Decides only: start() records the
  // requests that do start.
  std::vector<Verdict> decide(std::span<const std::vector<int64_t>> waiting,
                              std::span<const OwnTokens> own = {}) const;

  // A request started with these reservations (own_bytes of them on own_rank: its own tokens,
  // which may move later where `movable`), under an id unique while it runs.
  void start(int64_t id, std::vector<int64_t> rank_bytes, int own_rank = -1, int64_t own_bytes = 0,
             bool movable = false);

  // Own tokens to move before the next step so that the ranks' loads even out: a rank's load is
  // base[rank] (its Phase 1 chunk) plus the loads of the running sequences' own tokens it holds
  // (`own`, with their holder now). While a Phase 1 runs, the rank without an anchor runs out of
  // chunks long before the others (docs/algorithms.md): it then takes the streams' own tokens,
  // and after the Phase 1 they spread again. Each move takes the largest own tokens that may move
  // (started movable, may_move, and where recorded) from the most loaded rank that has such to the
  // least loaded one, where their reservation fits, and leaves the receiver no more loaded than
  // the giver (up to rounding), so equal loads stay put. None while a Phase 1 has fewer than
  // kMinStepsToMove steps left: a move costs one copy of the tokens between the ranks.
  struct OwnLoad {
    int64_t id = 0;
    int rank = 0;  // holding them now
    double load = 0;
    bool may_move = true;  // the engine's verdict (StepSequence::own_tokens_may_move)
  };
  struct OwnMove {
    int64_t id = 0;
    int rank = 0;  // to
  };
  static constexpr int64_t kMinStepsToMove = 64;
  std::vector<OwnMove> own_moves(std::span<const double> base, int64_t phase1_steps_left,
                                 std::span<const OwnLoad> own) const;
  // Records a move own_moves proposed: the own bytes' reservation goes with them.
  void move_own(int64_t id, int rank);
  // It ended (any way): its reservation is free again. Unknown ids are ignored.
  void finish(int64_t id);

  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  const std::vector<int64_t>& reserved_bytes() const { return reserved_; }  // [ranks]
  const std::vector<int64_t>& own_bytes() const { return own_bytes_; }      // [ranks]: own tokens' part

 private:
  struct Running {
    std::vector<int64_t> rank_bytes;
    int own_rank = -1;
    int64_t own_bytes = 0;
    bool movable = false;
  };

  // Whether `rank_bytes` fit on top of `reserved` on every rank.
  bool fits(std::span<const int64_t> reserved, std::span<const int64_t> rank_bytes) const;

  const SchedulerLimits limits_;
  std::vector<int64_t> reserved_;
  std::vector<int64_t> own_bytes_;
  std::map<int64_t, Running> running_;
};

}  // namespace star::server
