#include "star/engine/inference.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "star/attention/plan_builder.h"
#include "star/common/cpu_clock.h"
#include "star/engine/rocket_compaction.h"

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
                                              int64_t reserve_tokens, const BlockProgress& progress,
                                              std::span<const int32_t> query_ids) {
  Result<BlockPlan> plan = build_block_plan(context_ids, comm.size(), attention);
  if (!plan.ok()) return plan.status();

  EncodedContext out;
  out.layout = ShardLayout::of(*plan);
  out.algorithm = plan->algorithm;
  out.context_tokens = static_cast<int64_t>(context_ids.size());
  if (attention.sparse.algorithm == "skip_softmax") out.layout.skip_softmax = attention.sparse.skip_softmax;
  const bool host = comm.rank() == plan->query_host;
  const bool rocket = attention.sparse.algorithm == "rocket";
  if (rocket) {
    if (Status s = model.engine->supports_rocket(); !s.ok()) return s;
    if (Status s = check_rocket_plan(*plan, attention.sparse.rocket); !s.ok()) return s;
  }
  // RocketKV's query host keeps room for one pass of the query only: its answer goes to the
  // compacted shard.
  const auto room = static_cast<int64_t>(rocket ? query_ids.size() : reserve_tokens);
  Result<std::unique_ptr<KvShard>> shard =
      model.engine->new_shard(plan->ranks[comm.rank()].shard.size() + (host ? room : 0));
  if (!shard.ok()) return shard.status();
  out.shard = std::move(*shard);
  rocket::WindowQueries window;
  Result<Phase1Stats> phase1 =
      encode_context(*model.engine, *plan, comm, *out.shard, progress, out.layout.skip_softmax.prefill_scale_factor,
                     rocket ? WindowRecording{attention.sparse.rocket.window_size, &window} : WindowRecording{});
  if (!phase1.ok()) return phase1.status();
  if (rocket) {
    // Stage 1 is part of encoding the context: its time counts in Phase 1's.
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    Result<std::unique_ptr<KvShard>> compacted =
        rocket_stage1(*model.engine, comm, *plan, attention.sparse.rocket, window, query_ids, *out.shard);
    if (!compacted.ok()) return compacted.status();
    out.shard = std::move(*compacted);
    phase1->shard_tokens = out.shard->tokens();
    phase1->shard_bytes = out.shard->bytes();
    phase1->wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    phase1->compute_seconds += process_cpu_seconds() - cpu_start;
  }

  auto wall = gather_one(comm, phase1->wall_seconds);
  auto compute = gather_one(comm, phase1->compute_seconds);
  auto tokens = gather_one(comm, phase1->shard_tokens);
  auto bytes = gather_one(comm, phase1->shard_bytes);
  auto tiles = gather_one(comm, phase1->skip_softmax_tiles);
  for (const Status* s : {&wall.status(), &compute.status(), &tokens.status(), &bytes.status(), &tiles.status()}) {
    if (!s->ok()) return *s;
  }
  for (const SkipSoftmaxTiles& t : *tiles) out.phase1_skip_softmax_tiles += t;
  out.phase1_rank_wall_seconds = std::move(*wall);
  out.phase1_rank_compute_seconds = std::move(*compute);
  out.shard_tokens = std::move(*tokens);
  out.shard_bytes = std::move(*bytes);
  return out;
}

Result<GenerationResult> answer_query(const RuntimeModel& model, Communicator& comm, EncodedContext& context,
                                      std::span<const int32_t> query_ids, const GenerationOptions& options,
                                      const TokenSink& sink) {
  const int64_t encoded = context.shard->tokens();
  Result<GenerationResult> gen =
      generate(*model.engine, *model.tokenizer, context.layout, comm, *context.shard, query_ids, options, sink);
  context.shard->truncate(encoded);
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
  const int64_t reserve = static_cast<int64_t>(request.query_ids.size()) + request.generation.max_tokens;
  Result<EncodedContext> context =
      encode_request_context(model, comm, request.context_ids, request.attention, reserve, progress, request.query_ids);
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
