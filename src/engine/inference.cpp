#include "star/engine/inference.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "star/engine/single_sequence.h"
#include "star/engine/step_engine.h"

namespace star {

namespace {

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

double EncodedContext::phase1_seconds() const { return max_of(phase1_rank_wall_seconds); }
double EncodedContext::phase1_critical_path_seconds() const { return max_of(phase1_rank_compute_seconds); }

Status validate_request(const LlamaConfig& config, const InferenceRequest& request) {
  if (request.query_ids.empty()) return invalid_argument("query: empty (at least one token is needed)");
  if (request.generation.max_tokens < 1) {
    return invalid_argument("max_tokens: " + std::to_string(request.generation.max_tokens) + " (must be >= 1)");
  }
  if (Status s = validate_sampling(request.generation.sampling); !s.ok()) return s;
  // Compared without forming prompt + max_tokens: a client's max_tokens may be close to INT64_MAX.
  const auto prompt = static_cast<int64_t>(request.context_ids.size() + request.query_ids.size());
  if (request.generation.max_tokens > config.max_position_embeddings - prompt) {
    return invalid_argument("context: " + std::to_string(request.context_ids.size()) + " context + " +
                            std::to_string(request.query_ids.size()) + " query + " +
                            std::to_string(request.generation.max_tokens) + " max_tokens exceed the model's " +
                            std::to_string(config.max_position_embeddings) + " positions");
  }
  for (const auto* ids : {&request.context_ids, &request.query_ids}) {
    for (int32_t t : *ids) {
      if (t < 0 || t >= config.vocab_size) {
        return invalid_argument("token id " + std::to_string(t) + " outside the vocabulary [0, " +
                                std::to_string(config.vocab_size) + ")");
      }
    }
  }
  return ok_status();
}

namespace {

template <typename T>
Result<std::vector<T>> gather_one(Communicator& comm, T value) {
  std::vector<T> all(comm.size());
  if (Status s = comm.all_gather(&value, sizeof(T), all.data()); !s.ok()) return s;
  return all;
}

}  // namespace

Result<EncodedContext> encode_request_context(const RuntimeModel& model, Communicator& comm,
                                              std::span<const int32_t> context_ids, const AttentionConfig& attention,
                                              int64_t max_new_tokens, const BlockProgress& progress,
                                              std::span<const int32_t> query_ids) {
  // One context-only sequence through the step engine, each block's pass one chunk (no limit), as
  // encode_context runs them.
  StepEngine engine(model, comm, StepLimits{.max_num_batched_tokens = 0});
  SequenceSpec spec;
  spec.context_ids.assign(context_ids.begin(), context_ids.end());
  spec.attention = attention;
  spec.keep_as = "encoded";
  spec.query_ids.assign(query_ids.begin(), query_ids.end());
  spec.generation.max_tokens = max_new_tokens;
  auto on_event = [&](const SequenceEvent& e) {
    if (e.kind == SequenceEvent::Kind::kPhase1Progress && progress) progress(e.block_index, e.blocks_done, e.blocks_total);
    return true;
  };
  Result<SequenceStats> encoded = run_single_sequence(engine, comm, spec, on_event);
  if (!encoded.ok()) return encoded.status();
  Result<std::unique_ptr<EncodedContext>> context = engine.take_context(spec.keep_as);
  if (!context.ok()) return context.status();
  return std::move(**context);
}

Result<GenerationResult> answer_query(const RuntimeModel& model, Communicator& comm, EncodedContext& context,
                                      std::span<const int32_t> query_ids, const GenerationOptions& options,
                                      const TokenSink& sink) {
  Result<GenerationResult> gen =
      generate(*model.engine, *model.tokenizer, context.layout, comm, *context.shard, query_ids, options, sink);
  if (!gen.ok()) return gen;
  auto tiles = gather_one(comm, gen->skip_softmax_tiles);
  if (!tiles.ok()) return tiles.status();
  gen->skip_softmax_tiles = {};
  for (const SkipSoftmaxTiles& t : *tiles) gen->skip_softmax_tiles += t;
  return gen;
}

Result<InferenceOutcome> run_inference(const RuntimeModel& model, Communicator& comm, const InferenceRequest& request,
                                       const BlockProgress& progress, const TokenSink& sink) {
  if (Status s = validate_request(model.llama->config(), request); !s.ok()) return s;
  Result<EncodedContext> context = encode_request_context(model, comm, request.context_ids, request.attention,
                                                          request.generation.max_tokens, progress, request.query_ids);
  if (!context.ok()) return context.status();
  InferenceOutcome out;
  static_cast<EncodedContext&>(out) = std::move(*context);
  out.query_tokens = static_cast<int64_t>(request.query_ids.size());
  Result<GenerationResult> gen = answer_query(model, comm, out, request.query_ids, request.generation, sink);
  if (!gen.ok()) return gen.status();
  out.generation = std::move(*gen);
  return out;
}

}  // namespace star
