// RocketKV stage 1 across ranks, once Phase 1 has left each rank its shard (any plan):
//   1. the query host broadcasts the observation window's queries (W × Hq × d per layer): the last
//      W prompt tokens, of which the first C are its last context tokens (recorded while encoding
//      its last block) and the rest the query's (rocket::prompt_window);
//   2. every rank scores its own shard's keys against them; the softmax normalizer over all
//      ranks' keys comes from one all-gather of per-rank log-sum-exps (W × Hq per rank);
//   3. one all-gather of the scores; every rank lays them out in context order (ranks by shard
//      start), max-pools across shard edges, and takes the same global top (B − W) per KV head of
//      the context tokens outside the window;
//   4. each rank keeps its share of those tokens, the query host also the window's C context
//      tokens, and swaps its shard for a compacted one: per layer and KV head the ranks together
//      keep B − W + C context tokens, B once the window's W − C query tokens are appended.
// Every rank reaches the same selection as one rank holding the whole context, up to the rounding
// of the merged normalizer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "star/attention/block_plan.h"
#include "star/attention/rocket/window_queries.h"
#include "star/attention/sparse_attention_config.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"

namespace star {

// Ok when RocketKV can follow `plan` with `config`: shards must end with their newest tokens, so
// neither a windowed plan (streaming) nor keep_prefix_kv; sizes positive, page_size a power of two,
// prompt_budget >= window_size. Otherwise INVALID_ARGUMENT naming the field.
Status check_rocket_plan(const BlockPlan& plan, const RocketConfig& config);

// Stage 1 for a request after Phase 1, collective. When query_ids is not empty, the query first
// runs once over the full shards (RocketKV prefills the whole prompt before compressing; its KV is
// dropped again) to record its queries, which end the window after the context's (`context_window`,
// recorded by the query host in Phase 1); then compact_for_rocket.
Result<std::unique_ptr<KvShard>> rocket_stage1(EngineModel& model, Communicator& comm, const BlockPlan& plan,
                                               const RocketConfig& config, const rocket::WindowQueries& context_window,
                                               std::span<const int32_t> query_ids, KvShard& shard);

// Collective. `window` is read on the query host only. Returns this rank's compacted shard.
Result<std::unique_ptr<KvShard>> compact_for_rocket(EngineModel& model, Communicator& comm, const BlockPlan& plan,
                                                    const RocketConfig& config, const rocket::WindowQueries& window,
                                                    const KvShard& shard);

}  // namespace star
