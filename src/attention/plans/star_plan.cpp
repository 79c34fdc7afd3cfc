#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/plans/blocking.h"
#include "star/attention/plans/plan_builders.h"

namespace star {
namespace {

Status check_anchor_size(int64_t anchor_size) {
  if (anchor_size < -1 || anchor_size == 0) {
    return invalid_argument("star: anchor_size must be -1 (the block size) or >= 1, got " +
                            std::to_string(anchor_size));
  }
  return ok_status();
}

// Puts the anchor's tokens in front of a block's pass as lead tokens (KV not kept), at the
// positions just before the pass's first token: the block then reads the start of the context as
// the text right before it, where the paper's positions 0..a-1 leave a jump of the block's start
// minus a. Such positions exist: a pass starts at position a or later (its overlap never reaches
// into the anchor).
void lead_with_adjacent_anchor(std::span<const int32_t> context_ids, TokenRange anchor, EncodeStep& step) {
  std::vector<int32_t> positions(static_cast<size_t>(anchor.size()));
  std::iota(positions.begin(), positions.end(), step.positions.front() - static_cast<int32_t>(anchor.size()));
  step.token_ids.insert(step.token_ids.begin(), context_ids.begin() + anchor.begin, context_ids.begin() + anchor.end);
  step.positions.insert(step.positions.begin(), positions.begin(), positions.end());
  step.lead_tokens += anchor.size();
}

}  // namespace

// Star Attention Phase 1. Block 0 is encoded alone (positions 0..). Every later block i attends to
// [anchor ‖ Bi]: the anchor is the first a tokens of B0 at positions 0..a-1, Bi keeps its global
// positions, and only Bi's KV is kept. The anchor's KV depends on the anchor alone (causal), so a
// rank computes it once, as a kExtendPrefix step, and reuses it for each of its later blocks.
// a = anchor_size, or the block size when anchor_size is -1, and never more than |B0|. Ranks
// beyond the block count hold an empty shard and run nothing, so one block is exactly dense.
// boundary_overlap puts the previous block's tail between the anchor and Bi (the part the anchor
// does not already hold), as lead tokens whose KV is not kept. boundary_snap moves the edges back
// onto sentence ends before any of that; the anchor is then at most the snapped B0 (a <= |B0|).
// With an anchor that holds all of B0 (a >= |B0|, the default) the first edge stays: B1's pass reads B0
// whole in front of it, so that edge cuts nothing, and moving it would only shorten the anchor that
// every later block reads. anchor_positions "adjacent" gives each pass its own anchor, as lead
// tokens at the positions just before the pass (no kExtendPrefix step): a tokens more for each
// later block beyond a rank's first; with a snap, a pass that does not start at the anchor's end
// reads the anchor up to its last sentence end (at most boundary_snap tokens shorter).
Result<BlockPlan> build_star_plan(std::span<const int32_t> context_ids, int n_ranks,
                                  const AttentionConfig& config,
                                  std::span<const uint8_t> sentence_ends) {
  if (Status s = check_anchor_size(config.anchor_size); !s.ok()) return s;
  if (Status s = check_anchor_positions(config.anchor_positions); !s.ok()) return s;
  if (Status s = check_boundary_overlap("star", config.boundary_overlap); !s.ok()) return s;
  const auto context_tokens = static_cast<int64_t>(context_ids.size());
  Result<BlockLayout> layout = cut_into_blocks("star", context_tokens, n_ranks, config.block_size);
  if (!layout.ok()) return layout.status();
  const int64_t anchor_size = config.anchor_size == -1 ? layout->block_size : config.anchor_size;
  const bool anchor_holds_block0 = !layout->blocks.empty() && anchor_size >= layout->blocks.front().size();
  if (Status s = snap_block_edges("star", *layout, context_ids, sentence_ends, config.boundary_snap,
                                  /*first_edge=*/anchor_holds_block0 ? 2 : 1);
      !s.ok()) {
    return s;
  }
  BlockPlan plan = plan_with_shards("star", *layout, context_tokens);

  if (plan.blocks.empty()) return plan;

  const TokenRange& block0 = plan.blocks.front();
  const TokenRange anchor{0, std::min(anchor_size, block0.size())};
  const bool adjacent = config.anchor_positions == "adjacent";
  // Read right in front of a pass that does not continue it, an anchor ending inside a sentence
  // hands the pass that sentence's head as the text just before it (on SmolLM2 the later blocks
  // then answer a needle cut by the first edge with its digits before the edge). With a snap, such
  // passes read the anchor only up to its last sentence end within the snap.
  const TokenRange cut_anchor =
      adjacent && config.boundary_snap > 0
          ? TokenRange{0, snap_back(context_ids, sentence_ends, anchor.end,
                                    std::max<int64_t>(anchor.end - config.boundary_snap, 1))}
          : anchor;
  for (int r = 0; r < n_ranks; ++r) {
    RankPlan& rank = plan.ranks[static_cast<size_t>(r)];
    const BlockRun run = layout->rank_runs[static_cast<size_t>(r)];
    if (run.empty()) continue;
    int first = run.first;
    if (first == 0) {
      rank.steps.push_back(context_step(EncodeStep::Kind::kEncodeBlock, context_ids, block0, 0));
      ++first;
    }
    if (first < run.last && !adjacent) {
      rank.steps.push_back(
          context_step(EncodeStep::Kind::kExtendPrefix, context_ids, anchor, /*block_index=*/-1));
    }
    for (int i = first; i < run.last; ++i) {
      EncodeStep step = overlapped_block_step(context_ids, plan.blocks, i, config.boundary_overlap, anchor.end);
      if (adjacent) {
        lead_with_adjacent_anchor(context_ids, step.positions.front() == anchor.end ? anchor : cut_anchor, step);
      }
      rank.steps.push_back(std::move(step));
    }
  }
  return plan;
}

}  // namespace star
