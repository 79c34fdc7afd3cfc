// Pulsar Attention's Phase 1 plan (docs/algorithms.md, "pulsar" row). Block 0 is encoded alone; block
// i > 0 sees [sink ‖ Σ0 ‖ … ‖ Σi-1 ‖ Bi] and keeps only Bi's KV (unless keep_prefix_kv).
//
// Prefix reuse: the KV of Σj depends only on [sink ‖ Σ0..Σj], so each rank builds its prefix once:
// one kExtendPrefix [sink ‖ Σ0..Σ(i0-1)] before its first block i0 > 0, then for each later local
// block i one kExtendPrefix Σ(i-1) before Bi's kEncodeBlock. A rank holding block 0 encodes B0 first.
// Empty prefix steps (no sink, no summary tokens) are left out.
//
// Positions: "sparse" keeps every token's context index (gaps where tokens were left out) and the
// query starts at L. "contiguous" numbers each pass 0..len-1 (the prefix gets the same numbers in
// every pass, so reuse still holds) and the query starts at the longest Phase 1 pass.
#pragma once

#include <cstdint>
#include <span>

#include "star/attention/attention_config.h"
#include "star/attention/block_plan.h"
#include "star/common/status.h"

namespace star {

// Blocks as in every blocked plan (block_ranges.h); summaries as in pulsar_summary.h.
Result<BlockPlan> build_pulsar_plan(std::span<const int32_t> context_ids, int n_ranks,
                                    const AttentionConfig& config,
                                    std::span<const uint8_t> sentence_ends = {});

}  // namespace star
