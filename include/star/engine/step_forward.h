// The step engine's one forward per step (step_engine.h): the Phase 1 chunk's rows first, then
// every decoding sequence's pending rows, attended by row_split(chunk attention, batched Phase 2).
// Internal to the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/engine/phase1_job.h"
#include "star/engine/step_sequence.h"

namespace star {

struct StepForward {
  std::vector<float> logits;       // keep_logits: [logit rows, vocab]
  // Per decoding sequence, in the order given: its first row in `logits` and how many it has
  // there (its last row's, or every query row's when it asked for query logits).
  std::vector<int64_t> logit_first, logit_count;
  std::unique_ptr<BatchedQueryAttention> batched;  // the Phase 2 attention (null without rows)
};

// Runs one forward over `chunk` (may be null) and the pending rows of `decoding` (id order, each
// with rows). Every rank projects the logit rows onto its slice of the vocabulary
// (vocab_slice_of_rank) and one all-gather brings the slices together; `keep_logits`: this rank
// (the one that samples) assembles them into `logits`. The split depends only on the rank count,
// so a sequence's logits are the same batched or alone. Collective whenever `decoding` is not
// empty (every rank passes the same sequences) or the chunk is a ring segment.
Result<StepForward> run_step_forward(EngineModel& model, Communicator& comm, const Phase1Chunk* chunk,
                                     const std::vector<StepSequence*>& decoding, bool keep_logits);

}  // namespace star
