// Phase 1: runs this rank's part of any BlockPlan and leaves its KV shard behind.
// The executor knows three step kinds (block_plan.h) and nothing of the algorithm that made them;
// it runs a Phase1Job (phase1_job.h) with no chunk limit, one forward per chunk.
#pragma once

#include "star/attention/block_plan.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/engine/phase1_job.h"

namespace star {

// Encodes this rank's steps of `plan` into `shard` (which must be empty, made by `model`).
// Collective for ring plans: every rank of `comm` must call it with the same plan. A plan with a
// step kind the backend cannot run fails on every rank before any work. Every step's attention runs
// Skip Softmax with prefill_scale_factor S (0: dense).
Result<Phase1Stats> encode_context(EngineModel& model, const BlockPlan& plan, Communicator& comm,
                                   KvShard& shard, const BlockProgress& progress = {},
                                   double prefill_scale_factor = 0.0, const WindowRecording& window = {});

}  // namespace star
