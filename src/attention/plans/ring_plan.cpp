#include "star/attention/plans/blocking.h"
#include "star/attention/plans/plan_builders.h"

namespace star {

// Exact attention, distributed: each rank encodes its whole contiguous run of blocks as ONE
// kRingSegment at global positions, attending causally to itself and fully to every earlier
// rank's segment as its K/V comes around the ring (per layer).
// One segment per rank, not one step per block: a rank's run is contiguous, so "every earlier
// rank fully + itself causally" is exactly causal attention for every token of the run. Block-wise
// waves (step k: each rank encodes its k-th block) are impossible: a rank's first block needs, in
// every layer, the K/V of every earlier rank's last block, which that rank reaches only in its
// last step, so the waves would serialize.
// A rank with an empty run still takes an empty segment: the ring's passes are collective, so it
// forwards its neighbours' K/V (and attends to nothing); an empty context has no ring at all.
Result<BlockPlan> build_ring_plan(std::span<const int32_t> context_ids, int n_ranks,
                                  const AttentionConfig& config,
                                  std::span<const uint8_t> /*sentence_ends*/) {
  const auto context_tokens = static_cast<int64_t>(context_ids.size());
  Result<BlockLayout> layout = cut_into_blocks("ring", context_tokens, n_ranks, config.block_size);
  if (!layout.ok()) return layout.status();
  BlockPlan plan = plan_with_shards("ring", *layout, context_tokens);
  if (plan.blocks.empty()) return plan;
  for (int r = 0; r < n_ranks; ++r) {
    RankPlan& rank = plan.ranks[static_cast<size_t>(r)];
    const BlockRun run = layout->rank_runs[static_cast<size_t>(r)];
    rank.steps.push_back(context_step(EncodeStep::Kind::kRingSegment, context_ids, rank.shard,
                                      run.empty() ? -1 : run.first));
  }
  return plan;
}

}  // namespace star
