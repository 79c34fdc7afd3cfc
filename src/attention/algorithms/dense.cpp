#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_dense_parameters(const AttentionConfig&) { return ok_status(); }

// One causal pass over the whole context on rank 0, which keeps all of its KV.
Phase1Work dense_phase1_work(const CostInputs& in) {
  Phase1Work work;
  work.critical_path_tokens = in.context_tokens;
  work.attention_flops_per_layer = causal_attention_flops(in.model, work.critical_path_tokens);
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  return work;
}

}  // namespace star
