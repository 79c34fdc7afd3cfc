#include "star/attention/streaming_plan.h"

#include "star/attention/attention_config_io.h"
#include "star/attention/block_ranges.h"

namespace star {

Result<BlockPlan> build_streaming_plan(std::span<const int32_t> context_ids, int n_ranks,
                                       const AttentionConfig& config,
                                       std::span<const uint8_t> /*sentence_ends*/) {
  if (Status s = validate_attention_config(config); !s.ok()) return s;
  const int64_t context_tokens = static_cast<int64_t>(context_ids.size());
  // One block of the whole context; ranks beyond 0 get nothing.
  Result<BlockLayout> layout = split_into_blocks(context_tokens, context_tokens, n_ranks);
  if (!layout.ok()) return layout.status();

  BlockPlan plan;
  plan.algorithm = "streaming";
  plan.blocks = layout->blocks;
  plan.context_tokens = context_tokens;
  plan.query_host = 0;
  plan.query_position_start = context_tokens;
  plan.window = {config.streaming_sink, config.streaming_window};
  plan.ranks.resize(static_cast<size_t>(n_ranks));
  for (RankPlan& rank : plan.ranks) rank.shard = {context_tokens, context_tokens};

  plan.ranks[0].shard = {0, context_tokens};
  if (context_tokens == 0) return plan;
  EncodeStep step;
  step.kind = EncodeStep::Kind::kEncodeBlock;
  step.block_index = 0;
  step.token_ids.assign(context_ids.begin(), context_ids.end());
  step.positions.resize(context_ids.size());
  for (size_t t = 0; t < context_ids.size(); ++t) step.positions[t] = static_cast<int32_t>(t);
  plan.ranks[0].steps.push_back(std::move(step));
  return plan;
}

}  // namespace star
