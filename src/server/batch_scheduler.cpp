#include "star/server/batch_scheduler.h"

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

void BatchScheduler::start(int64_t id, std::vector<int64_t> rank_bytes, int own_rank, int64_t own_bytes) {
  finish(id);
  for (size_t rank = 0; rank < reserved_.size() && rank < rank_bytes.size(); ++rank) reserved_[rank] += rank_bytes[rank];
  const bool counted = own_rank >= 0 && static_cast<size_t>(own_rank) < own_bytes_.size();
  if (counted) own_bytes_[static_cast<size_t>(own_rank)] += own_bytes;
  running_.insert_or_assign(id, Running{std::move(rank_bytes), counted ? own_rank : -1, counted ? own_bytes : 0});
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
