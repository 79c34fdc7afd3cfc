#include <algorithm>
#include <vector>

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_no_anchor_parameters(const AttentionConfig&) { return ok_status(); }

// Every block alone (with boundary_overlap, behind the previous block's tail).
Phase1Work no_anchor_phase1_work(const CostInputs& in) {
  const std::vector<TokenRange>& blocks = in.layout.blocks;
  Phase1Work work;
  work.critical_path_tokens = blocks.front().size();
  for (size_t i = 1; i < blocks.size(); ++i) {
    work.critical_path_tokens = std::max(work.critical_path_tokens, boundary_lead_tokens(in, i, 0) + blocks[i].size());
  }
  work.attention_flops_per_layer = causal_attention_flops(in.model, work.critical_path_tokens);
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  return work;
}

}  // namespace star
