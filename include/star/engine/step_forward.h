// The step engine's one forward per step (step_engine.h): the Phase 1 chunk's rows first, then
// every decoding sequence's pending rows, attended by row_split(chunk attention, batched Phase 2).
// Internal to the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/chunk_limit.h"
#include "star/engine/engine_model.h"
#include "star/engine/phase1_job.h"
#include "star/engine/step_sequence.h"

namespace star {

struct StepForward {
  // keep_logits: [logit rows, vocab] (none where greedy_tokens). Where every row is greedy, only
  // each row's largest logits are exact, the others possibly −inf (forward_rows' largest_only).
  std::vector<float> logits;
  // keep_logits on several ranks, when every sequence's one logit row is greedy (no query logits):
  // its token, per sequence (the ranks send their slices' candidates instead of the logits).
  std::vector<int32_t> greedy_tokens;
  // Per decoding sequence, in the order given: its first row in `logits` and how many it has
  // there (its last row's, or every query row's when it asked for query logits).
  std::vector<int64_t> logit_first, logit_count;
  std::unique_ptr<BatchedQueryAttention> batched;  // the Phase 2 attention (null without rows)
};

// Row sharing (row_sharing.h) hands the decoding rows to the ranks by load, in rows' dense parts
// (chunk_limit.h's token-equivalents). Before any row a rank may already carry two kinds of work.
//
// Its Phase 1 chunk this step: `encoding` (null: none) runs one chunk a step on every rank that has
// one left (rank_chunks), each about the limit's cost; a chunk without a limit is a whole part,
// worth more than any rows.
std::vector<double> phase1_chunk_loads(const StepSequence* encoding, int ranks, const ChunkLimit& limit);

// Its sequences' pending rows attending their own tokens' KV (the query's and the generated
// tokens', kept on one rank: StepSequence::own_host): a key costs 1 / keys_per_token of a row
// (attention_keys_per_token).
std::vector<double> own_attention_loads(const std::vector<StepSequence*>& decoding, int ranks,
                                        int64_t keys_per_token);
// One sequence's share of that for its next `rows` rows (the owner's load, wherever it is).
double own_attention_load(const StepSequence& sequence, int64_t rows, int64_t keys_per_token);

// Runs one forward over `chunk` (may be null) and the pending rows of `decoding` (id order, each
// with rows); `chunk_loads` is phase1_chunk_loads of this step, for row sharing. Every rank
// projects the logit rows onto its slice of the vocabulary (vocab_slice_of_rank) and one
// all-gather brings the slices together; `keep_logits`: this rank (the one that samples) assembles
// them into `logits`, or, on several ranks when every row is greedy and no sequence returns its
// query logits, the slices' candidates into `greedy_tokens` (greedy_token: the same ids as Sampler
// on the whole rows). The split depends only on the rank count, so a sequence's logits are the
// same batched or alone. Collective whenever `decoding` is not empty (every rank passes the same
// sequences) or the chunk is a ring segment.
Result<StepForward> run_step_forward(EngineModel& model, Communicator& comm, const Phase1Chunk* chunk,
                                     const std::vector<StepSequence*>& decoding, bool keep_logits,
                                     const std::vector<double>& chunk_loads);

}  // namespace star
