// Each registered algorithm's parameter check and Phase 1 cost (algorithm_registry.h), one file per
// algorithm in src/attention/algorithms/. An algorithm without parameters of its own checks nothing;
// the fields every algorithm shares (block_size) are validate_attention_config's.
#pragma once

#include <string>

#include "star/attention/algorithm_registry.h"
#include "star/attention/attention_config.h"
#include "star/common/status.h"

namespace star {

// boundary_overlap's cost: the tokens of block i-1's tail (at most config.boundary_overlap, none
// before `not_before`, e.g. what star's anchor already holds) that block i > 0's pass reads.
int64_t boundary_lead_tokens(const CostInputs& inputs, size_t i, int64_t not_before);

Status check_dense_parameters(const AttentionConfig& config);
Phase1Work dense_phase1_work(const CostInputs& inputs);

Status check_star_parameters(const AttentionConfig& config);
// anchor_positions is "first" or "adjacent"; also the star plan builder's check.
Status check_anchor_positions(const std::string& anchor_positions);
Phase1Work star_phase1_work(const CostInputs& inputs);

Status check_no_anchor_parameters(const AttentionConfig& config);
Phase1Work no_anchor_phase1_work(const CostInputs& inputs);

Status check_ring_parameters(const AttentionConfig& config);
Phase1Work ring_phase1_work(const CostInputs& inputs);

Status check_pulsar_parameters(const AttentionConfig& config);
Phase1Work pulsar_phase1_work(const CostInputs& inputs);

Status check_streaming_parameters(const AttentionConfig& config);
Phase1Work streaming_phase1_work(const CostInputs& inputs);

}  // namespace star
