#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_no_anchor_parameters(const AttentionConfig&) { return ok_status(); }

// Every block alone: the longest pass is the first block (no later block is longer).
Phase1Work no_anchor_phase1_work(const CostInputs& in) {
  Phase1Work work;
  work.critical_path_tokens = in.layout.blocks.front().size();
  work.attention_flops_per_layer = causal_attention_flops(in.model, work.critical_path_tokens);
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  return work;
}

}  // namespace star
