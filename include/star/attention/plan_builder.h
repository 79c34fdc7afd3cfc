// build_block_plan: turns a context and an AttentionConfig into the Phase 1 BlockPlan of the
// configured algorithm. Plans are pure data and the same on every rank; each rank runs its own
// RankPlan.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

// context_ids: [L] token ids; n_ranks: H >= 1.
// INVALID_ARGUMENT for an unknown config.algorithm (the message lists the known ones) and for
// parameters the algorithm cannot use (the message names the field, its value and what is allowed).
// sentence_ends: per token id, whether it ends a sentence or a line (tokenizer/sentence_ends.h), for
// config.boundary_snap; FAILED_PRECONDITION when a snap is asked for and it is empty.
Result<BlockPlan> build_block_plan(std::span<const int32_t> context_ids, int n_ranks,
                                   const AttentionConfig& config, std::span<const uint8_t> sentence_ends = {});

// The algorithm names build_block_plan accepts: the registry's, in table order.
std::vector<std::string_view> plan_algorithm_names();

}  // namespace star
