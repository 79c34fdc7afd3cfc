#include "star/attention/plans/blocking.h"
#include "star/attention/plans/plan_builders.h"

namespace star {

// The ablation of star without the anchor: every block is encoded alone, at its global positions.
Result<BlockPlan> build_no_anchor_plan(std::span<const int32_t> context_ids, int n_ranks,
                                       const AttentionConfig& config) {
  const auto context_tokens = static_cast<int64_t>(context_ids.size());
  Result<Blocking> blocking =
      cut_into_blocks("no-anchor", context_tokens, n_ranks, config.block_size);
  if (!blocking.ok()) return blocking.status();
  BlockPlan plan = plan_with_shards("no-anchor", *blocking, context_tokens);
  for (int r = 0; r < n_ranks; ++r) {
    RankPlan& rank = plan.ranks[static_cast<size_t>(r)];
    for (int i = blocking->first_block[r]; i < blocking->first_block[r + 1]; ++i) {
      rank.steps.push_back(context_step(EncodeStep::Kind::kEncodeBlock, context_ids,
                                        plan.blocks[static_cast<size_t>(i)], i));
    }
  }
  return plan;
}

}  // namespace star
