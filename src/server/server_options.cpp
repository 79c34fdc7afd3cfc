#include "star/server/server_options.h"

#include <string>

namespace star::server {

namespace {

Status check_at_least(const char* field, const char* flag, int64_t value, int64_t least) {
  if (value >= least) return ok_status();
  return invalid_argument(std::string(field) + ": " + std::to_string(value) + " (" + flag + " must be at least " +
                          std::to_string(least) + ")");
}

}  // namespace

Status check_scheduler_limits(const SchedulerLimits& limits) {
  if (Status s = check_at_least("max_num_seqs", "--max-num-seqs", limits.max_num_seqs, 1); !s.ok()) return s;
  if (Status s = check_at_least("max_num_batched_tokens", "--max-num-batched-tokens", limits.max_num_batched_tokens, 0);
      !s.ok()) {
    return s;
  }
  if (Status s = check_at_least("max_chunk_cost", "--max-chunk-cost", limits.max_chunk_cost, 0); !s.ok()) return s;
  return check_at_least("kv_cache_bytes", "--kv-cache-bytes", limits.kv_cache_bytes, 0);
}

}  // namespace star::server
