// Phase 2: encode the query against every rank's KV shard, then generate token by token.
// Collective: every rank calls generate() with the same query and options. It runs as the one
// sequence of a StepEngine (step_engine.h), the path a request takes among others: rank 0 samples
// and decides when to stop, and the step messages carry its choices to the other ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "star/attention/block_plan.h"
#include "star/attention/skip_softmax.h"
#include "star/attention/sparse_attention_config.h"
#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/engine/sampler.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

// What Phase 2 needs from Phase 1's plan, and nothing more.
struct ShardLayout {
  int query_host = 0;
  int64_t query_position_start = 0;
  AttentionWindow window;
  SkipSoftmaxConfig skip_softmax;  // the query runs with its prefill S, generated tokens with its decode S
  static ShardLayout of(const BlockPlan& p) { return {p.query_host, p.query_position_start, p.window, {}}; }
};

struct GenerationOptions {
  SamplingParams sampling;
  int64_t max_tokens = 128;
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_token_ids;  // in addition to the model's end-of-text / end-of-turn ids
  bool ignore_eos = false;              // do not stop at the model's end ids (benchmarks)
  bool return_query_logits = false;     // keep logits at every query position (rank 0)
};

enum class FinishReason { kStop, kLength, kCancelled };
const char* finish_reason_name(FinishReason r);

struct GenerationResult {
  // Rank 0 only: the generated ids (a stop token id is not included) and their text, cut before
  // any stop string.
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason finish_reason = FinishReason::kLength;  // rank 0 only
  double first_token_seconds = 0;  // query encoding until the first token is chosen
  double decode_seconds = 0;       // the rest
  int64_t floats_sent = 0;         // this rank's all-gather payload, all layers and steps
  double decode_gather_merge_seconds = 0;  // all-gather + merge time after the first token
  std::vector<float> query_logits; // [query tokens, vocab] when asked for (rank 0)
  SkipSoftmaxTiles skip_softmax_tiles;  // Phase 2 attention tiles, this rank's (answer_query: every rank's)
};

// Rank 0 only: called with each token and the text it completed (possibly empty). Returning false
// cancels the generation at this token.
using TokenSink = std::function<bool(int32_t id, std::string_view text)>;

// `shard` was made by `model` (Phase 1's output) and is only read: the query's and the answer's KV
// live in a cache of their own on the query host.
Result<GenerationResult> generate(EngineModel& model, const Tokenizer& tokenizer, const ShardLayout& layout,
                                  Communicator& comm, KvShard& shard, std::span<const int32_t> query_ids,
                                  const GenerationOptions& options, const TokenSink& sink = {});

}  // namespace star
