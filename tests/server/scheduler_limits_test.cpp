// The batching flags' checks: each limit at its least value passes and one below is refused,
// naming the field, the value and the flag.
#include <gtest/gtest.h>

#include "star/server/server_options.h"

namespace star::server {
namespace {

TEST(SchedulerLimits, TheDefaultsAreVllmsAndPass) {
  const SchedulerLimits limits;
  EXPECT_EQ(limits.max_num_seqs, 256);
  EXPECT_EQ(limits.max_num_batched_tokens, 2048);
  EXPECT_TRUE(check_scheduler_limits(limits).ok());
}

TEST(SchedulerLimits, EachLimitAtItsLeastPassesAndOneBelowIsNamed) {
  struct Case {
    int64_t SchedulerLimits::*field;
    int64_t least;
    const char* message;
  };
  for (const Case& c : {Case{&SchedulerLimits::max_num_seqs, 1, "max_num_seqs: 0 (--max-num-seqs must be at least 1)"},
                        Case{&SchedulerLimits::max_num_batched_tokens, 0,
                             "max_num_batched_tokens: -1 (--max-num-batched-tokens must be at least 0)"},
                        Case{&SchedulerLimits::max_chunk_cost, 0,
                             "max_chunk_cost: -1 (--max-chunk-cost must be at least 0)"},
                        Case{&SchedulerLimits::kv_cache_bytes, 0,
                             "kv_cache_bytes: -1 (--kv-cache-bytes must be at least 0)"}}) {
    SchedulerLimits limits;
    limits.*c.field = c.least;
    EXPECT_TRUE(check_scheduler_limits(limits).ok()) << c.message;
    limits.*c.field = c.least - 1;
    const Status refused = check_scheduler_limits(limits);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.message(), c.message);
  }
}

}  // namespace
}  // namespace star::server
