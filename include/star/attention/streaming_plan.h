// StreamingLLM baseline plan: the whole context as one block on rank 0, like dense, with the
// attention window {streaming_sink, streaming_window} applied in Phase 1 and in decoding.
#pragma once

#include <cstdint>
#include <span>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

// Ranks other than 0 hold no tokens (their shards are empty ranges at L).
Result<BlockPlan> build_streaming_plan(std::span<const int32_t> context_ids, int n_ranks,
                                       const AttentionConfig& config,
                                       std::span<const uint8_t> sentence_ends = {});

}  // namespace star
