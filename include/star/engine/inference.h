// One request end to end on every rank: plan, Phase 1, Phase 2. Collective over `comm`.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "star/attention/attention_config.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/generator.h"
#include "star/engine/phase1_executor.h"
#include "star/engine/runtime_model.h"

namespace star {

struct InferenceRequest {
  std::vector<int32_t> context_ids;  // BOS first, when the model has one
  std::vector<int32_t> query_ids;
  AttentionConfig attention;
  GenerationOptions generation;
};

// What Phase 1 leaves on each rank: its KV shard and what Phase 2 needs to know about it. The
// same EncodedContext can answer many queries (Phase 2 only reads the shard).
struct EncodedContext {
  ShardLayout layout;
  std::unique_ptr<KvShard> shard;  // made by the RuntimeModel's engine model
  std::string algorithm;
  int64_t context_tokens = 0;
  std::vector<double> phase1_rank_wall_seconds;     // each rank's Phase 1 wall time
  std::vector<double> phase1_rank_compute_seconds;  // and its CPU time of model work
  std::vector<int64_t> shard_tokens;                // each rank's KV tokens after Phase 1
  std::vector<size_t> shard_bytes;                  // and their exact bytes
  SkipSoftmaxTiles phase1_skip_softmax_tiles;       // Phase 1 attention tiles, every rank's
  double phase1_seconds() const;                    // wall time of the slowest rank
  double phase1_critical_path_seconds() const;      // compute time of the slowest rank
};

struct InferenceOutcome : EncodedContext {
  GenerationResult generation;
  int64_t query_tokens = 0;
};

// Checks the request against the model before anything runs (every rank reaches the same verdict).
Status validate_request(const LlamaConfig& config, const InferenceRequest& request);

// Phase 1 alone, collective, as a StepEngine's context-only sequence (Phase 2 keeps the query's
// and answer's KV apart from the shard).
// With RocketKV, stage 1 follows; its observation window is the last window_size prompt tokens:
// it ends with `query_ids` when they are known, else with the context. A token_budget splits by
// the prompt and `max_new_tokens`, the answer's length to come.
Result<EncodedContext> encode_request_context(const RuntimeModel& model, Communicator& comm,
                                              std::span<const int32_t> context_ids, const AttentionConfig& attention,
                                              int64_t max_new_tokens = 0, const BlockProgress& progress = {},
                                              std::span<const int32_t> query_ids = {});

// Phase 2 alone, collective, on a context encoded before (only read).
Result<GenerationResult> answer_query(const RuntimeModel& model, Communicator& comm, EncodedContext& context,
                                      std::span<const int32_t> query_ids, const GenerationOptions& options,
                                      const TokenSink& sink = {});

// Both phases for one request.
Result<InferenceOutcome> run_inference(const RuntimeModel& model, Communicator& comm, const InferenceRequest& request,
                                       const BlockProgress& progress = {}, const TokenSink& sink = {});

}  // namespace star
