// One builder per Phase 1 algorithm, each in src/attention/plans/<name>_plan.cpp. build_block_plan
// dispatches to them through the algorithm registry (algorithm_registry.h); a new algorithm adds its
// function here and its entry there.
#pragma once

#include <cstdint>
#include <span>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

// sentence_ends: per token id, whether the token ends a sentence or a line
// (tokenizer/sentence_ends.h); the blocked builders move their edges onto those with
// config.boundary_snap. Empty: the caller has no tokenizer.
using PlanBuilder = Result<BlockPlan> (*)(std::span<const int32_t> context_ids, int n_ranks,
                                          const AttentionConfig& config, std::span<const uint8_t> sentence_ends);

Result<BlockPlan> build_dense_plan(std::span<const int32_t> context_ids, int n_ranks,
                                   const AttentionConfig& config,
                                   std::span<const uint8_t> sentence_ends = {});
Result<BlockPlan> build_star_plan(std::span<const int32_t> context_ids, int n_ranks,
                                  const AttentionConfig& config,
                                  std::span<const uint8_t> sentence_ends = {});
Result<BlockPlan> build_no_anchor_plan(std::span<const int32_t> context_ids, int n_ranks,
                                       const AttentionConfig& config,
                                       std::span<const uint8_t> sentence_ends = {});
Result<BlockPlan> build_ring_plan(std::span<const int32_t> context_ids, int n_ranks,
                                  const AttentionConfig& config,
                                  std::span<const uint8_t> sentence_ends = {});

}  // namespace star
