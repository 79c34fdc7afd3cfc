#include <algorithm>
#include <string>

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/config_checks.h"
#include "star/attention/cost_model.h"

namespace star {

Status check_anchor_positions(const std::string& anchor_positions) {
  return check_member("anchor_positions", anchor_positions, {"first", "adjacent"});
}

Status check_star_parameters(const AttentionConfig& c) {
  if (Status s = check_range("anchor_size", c.anchor_size, -1, kMaxTokens, " (-1: the block size)"); !s.ok()) {
    return s;
  }
  if (Status s = check_anchor_positions(c.anchor_positions); !s.ok()) return s;
  if (c.block_size > 0 && c.anchor_size > c.block_size) {
    return invalid_argument("attention config: anchor_size = " + std::to_string(c.anchor_size) +
                            " exceeds block_size = " + std::to_string(c.block_size) +
                            " (the anchor is the start of block 0)");
  }
  return ok_status();
}

// Block 0 alone, every later block behind the anchor (never longer than block 0) and, with
// boundary_overlap, the previous block's tail past the anchor.
Phase1Work star_phase1_work(const CostInputs& in) {
  const std::vector<TokenRange>& blocks = in.layout.blocks;
  const int64_t first_block = blocks.front().size();
  const int64_t anchor = std::min(in.config.anchor_size < 0 ? first_block : in.config.anchor_size, first_block);
  Phase1Work work;
  work.critical_path_tokens = first_block;
  for (size_t i = 1; i < blocks.size(); ++i) {
    work.critical_path_tokens = std::max(work.critical_path_tokens, anchor + boundary_lead_tokens(in, i, anchor) + blocks[i].size());
  }
  work.attention_flops_per_layer = causal_attention_flops(in.model, work.critical_path_tokens);
  work.kv_tokens_per_rank = in.largest_shard_tokens;
  return work;
}

}  // namespace star
