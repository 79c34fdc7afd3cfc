// RocketKV stage 1 across ranks, once Phase 1 has left each rank its shard (any plan):
//   1. the query host broadcasts the observation window's queries (W × Hq × d per layer), which it
//      recorded while encoding its last block: the last W context tokens;
//   2. every rank scores its own shard's keys against them; the softmax normalizer over all
//      ranks' keys comes from one all-gather of per-rank log-sum-exps (W × Hq per rank);
//   3. one all-gather of the scores; every rank lays them out in context order (ranks by shard
//      start), max-pools across shard edges, and takes the same global top (B − W) per KV head;
//   4. each rank keeps its share of those tokens, the query host also the window, and swaps its
//      shard for a compacted one, so per layer and KV head the ranks together keep exactly B.
// Every rank reaches the same selection as one rank holding the whole context, up to the rounding
// of the merged normalizer.
#pragma once

#include <cstdint>
#include <memory>

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

// Collective. `window` is read on the query host only. Returns this rank's compacted shard.
Result<std::unique_ptr<KvShard>> compact_for_rocket(EngineModel& model, Communicator& comm, const BlockPlan& plan,
                                                    const RocketConfig& config, const rocket::WindowQueries& window,
                                                    const KvShard& shard);

}  // namespace star
