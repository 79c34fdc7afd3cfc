#include "star/attention/plans/blocking.h"
#include "star/attention/plans/plan_builders.h"

namespace star {

// The whole context as one causal pass on rank 0; any other ranks hold empty shards [L, L) and
// only take part in Phase 2 (where an empty shard contributes nothing). An empty context is
// allowed: then no rank has a step, and the query starts at position 0.
Result<BlockPlan> build_dense_plan(std::span<const int32_t> context_ids, int n_ranks,
                                   const AttentionConfig& config,
                                   std::span<const uint8_t> /*sentence_ends*/) {
  if (Status s = check_rank_count("dense", n_ranks); !s.ok()) return s;
  if (Status s = check_block_size("dense", config.block_size); !s.ok()) return s;
  const auto context_tokens = static_cast<int64_t>(context_ids.size());
  const TokenRange whole{0, context_tokens};

  BlockPlan plan;
  plan.algorithm = "dense";
  plan.context_tokens = context_tokens;
  plan.query_position_start = context_tokens;
  plan.query_host = 0;
  plan.ranks.resize(static_cast<size_t>(n_ranks));
  for (RankPlan& rank : plan.ranks) rank.shard = {context_tokens, context_tokens};
  plan.ranks[0].shard = whole;
  if (context_tokens > 0) {
    plan.blocks.push_back(whole);
    plan.ranks[0].steps.push_back(
        context_step(EncodeStep::Kind::kEncodeBlock, context_ids, whole, /*block_index=*/0));
  }
  return plan;
}

}  // namespace star
