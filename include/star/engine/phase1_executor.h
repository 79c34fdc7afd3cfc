// Phase 1: runs this rank's part of any BlockPlan and leaves its KV shard behind.
// The executor knows three step kinds (block_plan.h) and nothing of the algorithm that made them.
#pragma once

#include <cstdint>
#include <functional>

#include "star/attention/block_plan.h"
#include "star/attention/rocket/window_queries.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"

namespace star {

struct Phase1Stats {
  double wall_seconds = 0;      // this rank's wall time in Phase 1
  double compute_seconds = 0;   // CPU seconds of model work (ring communication excluded)
  int64_t tokens_processed = 0; // every token fed through the model, prefix steps included
  int64_t shard_tokens = 0;     // tokens whose KV this rank holds afterwards
  size_t shard_bytes = 0;       // exact bytes of that KV
  SkipSoftmaxTiles skip_softmax_tiles;  // this rank's attention tiles (Skip Softmax on)
};

// Called on each rank after each block it encoded: (block index, blocks done here, blocks here).
using BlockProgress = std::function<void(int block_index, int done, int total)>;

// RocketKV's observation window: when `out` is set, the query host records the queries of the last
// `rows` tokens of its last block (the context's last tokens) into it.
struct WindowRecording {
  int64_t rows = 0;
  rocket::WindowQueries* out = nullptr;
};

// Encodes this rank's steps of `plan` into `shard` (which must be empty, made by `model`).
// Collective for ring plans: every rank of `comm` must call it with the same plan. A plan with a
// step kind the backend cannot run fails on every rank before any work. Every step's attention runs
// Skip Softmax with prefill_scale_factor S (0: dense).
Result<Phase1Stats> encode_context(EngineModel& model, const BlockPlan& plan, Communicator& comm,
                                   KvShard& shard, const BlockProgress& progress = {},
                                   double prefill_scale_factor = 0.0, const WindowRecording& window = {});

}  // namespace star
