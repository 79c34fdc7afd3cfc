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
    : limits_(limits), reserved_(static_cast<size_t>(ranks), 0) {}

bool BatchScheduler::fits(std::span<const int64_t> reserved, std::span<const int64_t> rank_bytes) const {
  if (limits_.kv_cache_bytes == 0) return true;
  for (size_t rank = 0; rank < rank_bytes.size() && rank < reserved.size(); ++rank) {
    // Compared without forming the sum: both stay within the budget, so the difference cannot overflow.
    if (rank_bytes[rank] > limits_.kv_cache_bytes - reserved[rank]) return false;
  }
  return true;
}

std::vector<BatchScheduler::Verdict> BatchScheduler::decide(std::span<const std::vector<int64_t>> waiting) const {
  std::vector<Verdict> verdicts(waiting.size());
  std::vector<int64_t> reserved = reserved_;
  int64_t running = this->running();
  bool blocked = false;  // an earlier request waits: every later one waits behind it
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (Status s = check_fits_kv_cache("request", waiting[i], limits_); !s.ok()) {
      verdicts[i] = {Verdict::Kind::kRefuse, s};
      continue;
    }
    if (blocked || running >= limits_.max_num_seqs || !fits(reserved, waiting[i])) {
      blocked = true;
      continue;
    }
    verdicts[i].kind = Verdict::Kind::kStart;
    ++running;
    for (size_t rank = 0; rank < reserved.size() && rank < waiting[i].size(); ++rank) reserved[rank] += waiting[i][rank];
  }
  return verdicts;
}

void BatchScheduler::start(int64_t id, std::vector<int64_t> rank_bytes) {
  finish(id);
  for (size_t rank = 0; rank < reserved_.size() && rank < rank_bytes.size(); ++rank) reserved_[rank] += rank_bytes[rank];
  running_.insert_or_assign(id, std::move(rank_bytes));
}

void BatchScheduler::finish(int64_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  for (size_t rank = 0; rank < reserved_.size() && rank < it->second.size(); ++rank) reserved_[rank] -= it->second[rank];
  running_.erase(it);
}

}  // namespace star::server
