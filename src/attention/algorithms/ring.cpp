#include <algorithm>

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_ring_parameters(const AttentionConfig&) { return ok_status(); }

// Each rank encodes its whole segment in one pass, holding one remote segment's K/V in flight; its
// attention is its segment's rows of the dense causal triangle, causal(end) − causal(begin).
Phase1Work ring_phase1_work(const CostInputs& in) {
  Phase1Work work;
  work.critical_path_tokens = in.largest_shard_tokens;
  work.in_flight_kv_tokens = in.largest_shard_tokens;
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  for (int r = 0; r < in.n_ranks; ++r) {
    const TokenRange segment = in.layout.shard(r);
    work.attention_flops_per_layer =
        std::max(work.attention_flops_per_layer,
                 causal_attention_flops(in.model, segment.end) - causal_attention_flops(in.model, segment.begin));
  }
  return work;
}

}  // namespace star
