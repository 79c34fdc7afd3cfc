// One sequence inside the StepEngine (step_engine.h): what every rank keeps about it between steps,
// and its admission. Internal to the engine; every field is derived from the step messages alone
// (rank 0's sampler aside), so every rank holds the same sequences in the same phases.
#pragma once

#include <chrono>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/attention/rocket/window_queries.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/engine/inference.h"
#include "star/engine/phase1_job.h"
#include "star/engine/sampler.h"
#include "star/engine/step_engine.h"

namespace star {

// A context a sequence reads in Phase 2: its layout and this rank's shard (read-only).
struct ContextView {
  ShardLayout layout;
  const KvShard* shard = nullptr;
};

struct StepSequence {
  enum class Phase {
    kEncoding,     // Phase 1 chunks, one per step while it is the oldest encoding sequence
    kRocketStage1, // every rank's chunks done; RocketKV's stage 1 runs next step
    kDecoding,     // Phase 2: rows to run (`pending`), or waiting for rank 0's sampled token
  };
  using Clock = std::chrono::steady_clock;

  SequenceSpec spec;
  Phase phase = Phase::kEncoding;
  Clock::time_point admitted_at;

  // An inline context: its plan, the job encoding it, and the context it becomes.
  std::optional<BlockPlan> plan;
  std::unique_ptr<Phase1Job> job;
  std::vector<int64_t> rank_chunks;  // the chunks each rank runs for the plan, one a step
  int64_t chunk_steps = 0;           // steps this sequence has been the encoding one
  std::vector<std::array<int, 3>> blocks_encoded;  // (block, done, total) since the last step's events
  Phase1Stats phase1;          // this rank's, once the job is done
  rocket::WindowQueries rocket_window;  // the query host's context queries for RocketKV's stage 1
  std::unique_ptr<EncodedContext> own_context;
  // The context Phase 2 reads: own_context's, a kept one's (`kept` holds it alive) or a borrowed one.
  ContextView context;
  std::shared_ptr<const EncodedContext> kept;
  std::string borrowed_id;  // the id of a kept or borrowed context it reads

  // Phase 2. `own` (own_host() only): the query's and the generated tokens' KV.
  std::unique_ptr<KvShard> own;
  std::vector<int32_t> pending;  // rows of the next forward: the query, then the last sampled token
  int64_t next_position = 0;
  bool first_rows = true;        // pending is the query
  int64_t generated = 0;         // tokens chosen so far (all ranks count them from `sampled`)
  std::vector<int32_t> stop_ids; // spec's stop ids, and the model's end ids unless ignore_eos
  Clock::time_point decode_started, first_token_at;

  // Rank 0.
  std::optional<Sampler> sampler;
  SequenceStats stats;

  bool context_only() const { return !spec.keep_as.empty(); }
  // The rank keeping the own tokens: the spec's own_host, else the context's query host.
  int own_host() const { return spec.own_host >= 0 ? spec.own_host : context.layout.query_host; }
  // Own rows stored so far (every forward stores its rows and advances next_position by them),
  // and the most it will hold (the query and max_tokens answer tokens).
  int64_t own_rows() const { return next_position - context.layout.query_position_start; }
  int64_t own_capacity() const {
    return static_cast<int64_t>(spec.query_ids.size()) + spec.generation.max_tokens;
  }
  // Whether the own tokens may be kept off the query host: a plain context (no bounded window, no
  // Skip Softmax, no RocketKV), as BatchedQuerySlot::own_host needs.
  bool own_tokens_may_leave_host() const;
  // Whether they may move there while it decodes (StepMessage::moved): besides, its query host
  // holds part of the context, as own_tokens_movable asks at admission (known for an inline or
  // kept context; a borrowed one's shard sizes are not, so it keeps its own tokens where they are).
  bool own_tokens_may_move() const;
  // The most chunks any rank runs (rank_chunks), 0 without an inline context.
  int64_t slowest_chunks() const;
  bool is_stop(int32_t token) const;
  // A token chosen as the generated-th ends the sequence: a stop id, or max_tokens reached.
  bool ends_with(int32_t token, int64_t generated_count) const;
};

// What admission needs to know of the engine.
struct AdmissionContext {
  EngineModel& model;
  std::span<const uint8_t> sentence_ends;  // the tokenizer's (boundary_snap); empty without one
  Communicator& comm;
  ChunkLimit chunk_limit;
  // The kept or borrowed context named `id`, or none.
  std::function<std::optional<ContextView>(const std::string& id)> find_context;
  std::function<std::shared_ptr<const EncodedContext>(const std::string& id)> kept_context;
};

// Checks `spec` (every rank reaches the same verdict: a request error is INVALID_ARGUMENT,
// NOT_FOUND or UNIMPLEMENTED naming the field) and prepares its sequence: its plan and Phase 1 job
// for an inline context, or the kept context it reads.
Result<std::unique_ptr<StepSequence>> admit_sequence(const AdmissionContext& engine, const SequenceSpec& spec);

// Turns a sequence whose Phase 1 is done on every rank into its EncodedContext (collective: the
// per-rank stats are all-gathered) and, unless it only encodes, into a decoding sequence.
Status finish_encoding(EngineModel& model, Communicator& comm, StepSequence& sequence);

// RocketKV's stage 1 for a sequence in kRocketStage1 (collective), then finish_encoding.
Status run_rocket_stage1(EngineModel& model, Communicator& comm, StepSequence& sequence);

}  // namespace star
