#include <algorithm>
#include <vector>

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/config_checks.h"
#include "star/attention/cost_model.h"
#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

// Token counts of each summary Σ0..Σ(n-2), at the budget.
std::vector<int64_t> summary_tokens(const std::vector<TokenRange>& blocks, const AttentionConfig& config,
                                    int64_t sink) {
  const int64_t budget = summary_budget_chunks(config, blocks.front().size()) * config.chunk_tokens;
  std::vector<int64_t> tokens;
  for (size_t j = 0; j + 1 < blocks.size(); ++j) {
    const int64_t eligible = blocks[j].size() - (j == 0 ? sink : 0);
    tokens.push_back(std::min(budget, eligible));
  }
  return tokens;
}

}  // namespace

Status check_pulsar_parameters(const AttentionConfig& c) {
  for (Status s : {
           check_range("sink_tokens", c.sink_tokens, 0, kMaxTokens),
           check_range("chunk_tokens", c.chunk_tokens, 1, kMaxTokens),
           check_range("summary_chunks", c.summary_chunks, 0, kMaxTokens, " (0: use summary_fraction)"),
           check_member("scoring", c.scoring, {"max_idf", "tfidf", "bm25", "entropy", "even"}),
           check_member("position_mode", c.position_mode, {"sparse", "contiguous"}),
           check_range("summary_fraction", c.summary_fraction, 0.0, 1.0),
       }) {
    if (!s.ok()) return s;
  }
  return ok_status();
}

// Block 0 alone; block i > 0 behind [sink ‖ Σ0..Σi-1]. Summaries are costed at min(k · chunk_tokens,
// tokens eligible in the block). With keep_prefix_kv a rank also keeps the prefix of its last block.
Phase1Work pulsar_phase1_work(const CostInputs& in) {
  const std::vector<TokenRange>& blocks = in.layout.blocks;
  const int64_t first_block = blocks.front().size();
  const int64_t sink = std::min(in.config.sink_tokens, first_block);
  const std::vector<int64_t> summaries = summary_tokens(blocks, in.config, sink);
  std::vector<int64_t> prefix(blocks.size(), 0);  // [sink ‖ Σ0..Σi-1] before block i > 0
  Phase1Work work;
  work.critical_path_tokens = first_block;
  for (size_t i = 1; i < blocks.size(); ++i) {
    prefix[i] = (i == 1 ? sink : prefix[i - 1]) + summaries[i - 1];
    work.critical_path_tokens = std::max(work.critical_path_tokens, prefix[i] + boundary_lead_tokens(in, i, 0) + blocks[i].size());
  }
  work.attention_flops_per_layer = causal_attention_flops(in.model, work.critical_path_tokens);
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  if (in.config.keep_prefix_kv) {
    work.kv_tokens_per_rank = 0;
    for (int r = 0; r < in.n_ranks; ++r) {
      const BlockRun run = in.layout.rank_runs[static_cast<size_t>(r)];
      const int64_t kept_prefix = run.empty() ? 0 : prefix[static_cast<size_t>(run.last - 1)];
      work.kv_tokens_per_rank = std::max(work.kv_tokens_per_rank, in.layout.shard(r).size() + kept_prefix);
    }
  }
  return work;
}

}  // namespace star
