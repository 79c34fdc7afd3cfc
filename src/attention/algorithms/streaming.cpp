#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/config_checks.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_streaming_parameters(const AttentionConfig& c) {
  if (Status s = check_range("streaming_sink", c.streaming_sink, 0, kMaxTokens); !s.ok()) return s;
  return check_range("streaming_window", c.streaming_window, 1, kMaxTokens,
                     " (an unbounded window is algorithm dense)");
}

// One pass over the whole context on rank 0, which keeps all of it (the window bounds what is read,
// not what is stored). The first S + W tokens attend causally; each later one sees S + W keys.
Phase1Work streaming_phase1_work(const CostInputs& in) {
  const LlamaConfig& model = in.model;
  const int64_t visible = in.config.streaming_sink + in.config.streaming_window;
  Phase1Work work;
  work.critical_path_tokens = in.context_tokens;
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  if (in.context_tokens > visible) {
    const double per_key = 4.0 * static_cast<double>((model.n_heads + model.n_kv_heads) * model.head_dim);
    work.attention_flops_per_layer = causal_attention_flops(model, visible) +
                                     per_key * static_cast<double>(visible) *
                                         static_cast<double>(in.context_tokens - visible);
  } else {
    work.attention_flops_per_layer = causal_attention_flops(model, work.critical_path_tokens);
  }
  return work;
}

}  // namespace star
