#include "star/server/batch_scheduler.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace star::server {

Status check_fits_kv_cache(const char* field, std::span<const int64_t> rank_bytes, const SchedulerLimits& limits) {
  if (limits.kv_cache_bytes == 0) return ok_status();
  for (size_t rank = 0; rank < rank_bytes.size(); ++rank) {
    if (rank_bytes[rank] > limits.kv_cache_bytes) {
      return resource_exhausted(std::string(field) + ": the request's KV needs " + std::to_string(rank_bytes[rank]) +
                                " bytes on rank " + std::to_string(rank) + ", more than the " +
                                std::to_string(limits.kv_cache_bytes) +
                                " bytes per rank that running requests may reserve (--kv-cache-bytes)");
    }
  }
  return ok_status();
}

BatchScheduler::BatchScheduler(const SchedulerLimits& limits, int ranks)
    : limits_(limits), reserved_(static_cast<size_t>(ranks), 0), own_bytes_(static_cast<size_t>(ranks), 0) {}

bool BatchScheduler::fits(std::span<const int64_t> reserved, std::span<const int64_t> rank_bytes) const {
  if (limits_.kv_cache_bytes == 0) return true;
  for (size_t rank = 0; rank < rank_bytes.size() && rank < reserved.size(); ++rank) {
    // Compared without forming the sum: both stay within the budget, so the difference cannot overflow.
    if (rank_bytes[rank] > limits_.kv_cache_bytes - reserved[rank]) return false;
  }
  return true;
}

std::vector<BatchScheduler::Verdict> BatchScheduler::decide(std::span<const std::vector<int64_t>> waiting,
                                                            std::span<const OwnTokens> own) const {
  std::vector<Verdict> verdicts(waiting.size());
  std::vector<int64_t> reserved = reserved_;
  std::vector<int64_t> own_bytes = own_bytes_;
  int64_t running = this->running();
  bool blocked = false;  // an earlier request waits: every later one waits behind it
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (Status s = check_fits_kv_cache("request", waiting[i], limits_); !s.ok()) {
      verdicts[i].kind = Verdict::Kind::kRefuse;
      verdicts[i].refusal = s;
      continue;
    }
    const OwnTokens tokens = i < own.size() ? own[i] : OwnTokens{};
    const auto ranks = static_cast<int>(reserved.size());
    const bool placed = tokens.bytes > 0 && tokens.query_host >= 0 && tokens.query_host < ranks &&
                        static_cast<size_t>(tokens.query_host) < waiting[i].size();
    // The reservation with the own bytes on `rank` instead of the query host.
    const auto moved_to = [&](int rank) {
      std::vector<int64_t> bytes = waiting[i];
      bytes[static_cast<size_t>(tokens.query_host)] -= tokens.bytes;
      bytes[static_cast<size_t>(rank)] += tokens.bytes;
      return bytes;
    };
    int own_rank = placed ? tokens.query_host : -1;
    if (placed && tokens.movable) {
      for (int rank = 0; rank < ranks && static_cast<size_t>(rank) < waiting[i].size(); ++rank) {
        if (own_bytes[static_cast<size_t>(rank)] < own_bytes[static_cast<size_t>(own_rank)] &&
            fits(reserved, moved_to(rank))) {
          own_rank = rank;
        }
      }
    }
    std::vector<int64_t> bytes = placed ? moved_to(own_rank) : waiting[i];
    if (blocked || running >= limits_.max_num_seqs || !fits(reserved, bytes)) {
      blocked = true;
      continue;
    }
    ++running;
    for (size_t rank = 0; rank < reserved.size() && rank < bytes.size(); ++rank) reserved[rank] += bytes[rank];
    if (placed) own_bytes[static_cast<size_t>(own_rank)] += tokens.bytes;
    verdicts[i] = {Verdict::Kind::kStart, ok_status(), std::move(bytes), own_rank};
  }
  return verdicts;
}

void BatchScheduler::start(int64_t id, std::vector<int64_t> rank_bytes, int own_rank, int64_t own_bytes,
                           bool movable) {
  finish(id);
  for (size_t rank = 0; rank < reserved_.size() && rank < rank_bytes.size(); ++rank) reserved_[rank] += rank_bytes[rank];
  const bool counted = own_rank >= 0 && static_cast<size_t>(own_rank) < own_bytes_.size();
  if (counted) own_bytes_[static_cast<size_t>(own_rank)] += own_bytes;
  running_.insert_or_assign(id, Running{std::move(rank_bytes), counted ? own_rank : -1, counted ? own_bytes : 0,
                                        counted && movable});
}

std::vector<BatchScheduler::OwnMove> BatchScheduler::own_moves(std::span<const double> base, int64_t phase1_steps_left,
                                                               std::span<const OwnLoad> own) const {
  std::vector<OwnMove> moves;
  const auto ranks = static_cast<int>(reserved_.size());
  if (ranks < 2 || (phase1_steps_left > 0 && phase1_steps_left < kMinStepsToMove)) return moves;
  std::vector<double> load(static_cast<size_t>(ranks), 0.0);
  for (int r = 0; r < ranks && static_cast<size_t>(r) < base.size(); ++r) load[static_cast<size_t>(r)] = base[static_cast<size_t>(r)];
  // Every running sequence's own tokens count where they are (one that ended is gone after this
  // step); those the scheduler may move, where it recorded them, are the candidates.
  std::vector<OwnLoad> candidates;
  double own_total = 0;
  for (const OwnLoad& o : own) {
    auto it = running_.find(o.id);
    if (it == running_.end() || o.rank < 0 || o.rank >= ranks) continue;
    load[static_cast<size_t>(o.rank)] += o.load;
    own_total += o.load;
    if (o.may_move && it->second.movable && it->second.own_rank == o.rank) candidates.push_back(o);
  }
  // The receiver may end level with the giver: a slack of the own loads' size absorbs their sums'
  // rounding.
  const double slack = 1e-9 * std::max(own_total, 1.0);
  std::vector<int64_t> reserved = reserved_;
  std::vector<int> by_load(static_cast<size_t>(ranks));
  // Each move narrows the gap between a giver and the least loaded rank and takes its candidate
  // out, so the loop ends.
  while (!candidates.empty()) {
    const auto least = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    std::iota(by_load.begin(), by_load.end(), 0);
    std::stable_sort(by_load.begin(), by_load.end(),
                     [&](int a, int b) { return load[static_cast<size_t>(a)] > load[static_cast<size_t>(b)]; });
    // From the most loaded rank that has one to give.
    auto pick = candidates.end();
    for (int giver : by_load) {
      const double gap = load[static_cast<size_t>(giver)] - load[static_cast<size_t>(least)] + slack;
      for (auto c = candidates.begin(); c != candidates.end(); ++c) {
        if (c->rank != giver || giver == least || c->load <= 0 || 2 * c->load > gap) continue;
        const int64_t bytes = running_.at(c->id).own_bytes;
        if (limits_.kv_cache_bytes > 0 && bytes > limits_.kv_cache_bytes - reserved[static_cast<size_t>(least)]) continue;
        if (pick == candidates.end() || c->load > pick->load) pick = c;
      }
      if (pick != candidates.end()) break;
    }
    if (pick == candidates.end()) break;
    const auto from = static_cast<size_t>(pick->rank), to = static_cast<size_t>(least);
    const int64_t bytes = running_.at(pick->id).own_bytes;
    reserved[from] -= bytes;
    reserved[to] += bytes;
    load[from] -= pick->load;
    load[to] += pick->load;
    moves.push_back({pick->id, least});
    candidates.erase(pick);
  }
  return moves;
}

void BatchScheduler::move_own(int64_t id, int rank) {
  auto it = running_.find(id);
  if (it == running_.end() || it->second.own_rank < 0 || rank < 0 || static_cast<size_t>(rank) >= reserved_.size()) {
    return;
  }
  Running& r = it->second;
  const auto from = static_cast<size_t>(r.own_rank), to = static_cast<size_t>(rank);
  r.rank_bytes.resize(reserved_.size(), 0);
  r.rank_bytes[from] -= r.own_bytes;
  r.rank_bytes[to] += r.own_bytes;
  reserved_[from] -= r.own_bytes;
  reserved_[to] += r.own_bytes;
  own_bytes_[from] -= r.own_bytes;
  own_bytes_[to] += r.own_bytes;
  r.own_rank = rank;
}

void BatchScheduler::finish(int64_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  const Running& r = it->second;
  for (size_t rank = 0; rank < reserved_.size() && rank < r.rank_bytes.size(); ++rank) {
    reserved_[rank] -= r.rank_bytes[rank];
  }
  if (r.own_rank >= 0) own_bytes_[static_cast<size_t>(r.own_rank)] -= r.own_bytes;
  running_.erase(it);
}

}  // namespace star::server
