#include "star/attention/plans/blocking.h"
#include "star/attention/plans/plan_builders.h"

namespace star {

// The ablation of star without the anchor: every block is encoded alone, at its global positions
// (with boundary_overlap, behind the previous block's tail, whose KV is not kept; with
// boundary_snap, between edges moved back onto sentence ends).
Result<BlockPlan> build_no_anchor_plan(std::span<const int32_t> context_ids, int n_ranks,
                                       const AttentionConfig& config,
                                       std::span<const uint8_t> sentence_ends) {
  if (Status s = check_boundary_overlap("no-anchor", config.boundary_overlap); !s.ok()) return s;
  const auto context_tokens = static_cast<int64_t>(context_ids.size());
  Result<BlockLayout> layout =
      cut_into_blocks("no-anchor", context_tokens, n_ranks, config.block_size);
  if (!layout.ok()) return layout.status();
  if (Status s = snap_block_edges("no-anchor", *layout, context_ids, sentence_ends, config.boundary_snap); !s.ok()) {
    return s;
  }
  BlockPlan plan = plan_with_shards("no-anchor", *layout, context_tokens);
  for (int r = 0; r < n_ranks; ++r) {
    RankPlan& rank = plan.ranks[static_cast<size_t>(r)];
    const BlockRun run = layout->rank_runs[static_cast<size_t>(r)];
    for (int i = run.first; i < run.last; ++i) {
      rank.steps.push_back(overlapped_block_step(context_ids, plan.blocks, i, config.boundary_overlap, 0));
    }
  }
  return plan;
}

}  // namespace star
