#include "star/engine/step_sequence.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "star/attention/plan_builder.h"
#include "star/attention/rocket/token_budget.h"
#include "star/common/cpu_clock.h"
#include "star/engine/rocket_compaction.h"

namespace star {

namespace {

double seconds_between(StepSequence::Clock::time_point a, StepSequence::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Status check_tokens(const char* field, const std::vector<int32_t>& ids, int64_t vocab) {
  for (int32_t t : ids) {
    if (t < 0 || t >= vocab) {
      return invalid_argument(std::string(field) + ": token id " + std::to_string(t) + " outside the vocabulary [0, " +
                              std::to_string(vocab) + ")");
    }
  }
  return ok_status();
}

// Phase 2's checks (the query's positions are known once the context's layout is).
Status check_generation(const LlamaConfig& config, const SequenceSpec& spec, int64_t query_position_start) {
  if (spec.query_ids.empty()) return invalid_argument("query: empty (at least one token is needed)");
  const GenerationOptions& g = spec.generation;
  if (g.max_tokens < 1) return invalid_argument("max_tokens: " + std::to_string(g.max_tokens) + " (must be >= 1)");
  if (Status s = validate_sampling(g.sampling); !s.ok()) return s;
  // Compared without forming start + query + max_tokens: a client's max_tokens may be near INT64_MAX.
  const int64_t prompt_end = query_position_start + static_cast<int64_t>(spec.query_ids.size());
  if (g.max_tokens > config.max_position_embeddings - prompt_end) {
    return invalid_argument("context: positions up to " + std::to_string(prompt_end) + " + " +
                            std::to_string(g.max_tokens) + " max_tokens exceed the model's " +
                            std::to_string(config.max_position_embeddings) + " positions");
  }
  return ok_status();
}

template <typename T>
Result<std::vector<T>> gather_one(Communicator& comm, T value) {
  std::vector<T> all(static_cast<size_t>(comm.size()));
  if (Status s = comm.all_gather(&value, sizeof(T), all.data()); !s.ok()) return s;
  return all;
}

// Phase 2 from the context in sequence.context: the own-token cache on its rank (own_host) and the
// query as the first rows.
Status start_decoding(EngineModel& model, Communicator& comm, StepSequence& sequence) {
  const SequenceSpec& spec = sequence.spec;
  const ShardLayout& layout = sequence.context.layout;
  if (spec.own_host >= 0 && spec.own_host != layout.query_host && !sequence.own_tokens_may_leave_host()) {
    return invalid_argument("own_host: " + std::to_string(spec.own_host) +
                            " is not the query host, which a bounded window, Skip Softmax or RocketKV needs");
  }
  if (comm.rank() == sequence.own_host()) {
    Result<std::unique_ptr<KvShard>> own = model.new_shard(sequence.own_capacity());
    if (!own.ok()) return own.status();
    sequence.own = std::move(*own);
  }
  sequence.phase = StepSequence::Phase::kDecoding;
  sequence.pending = spec.query_ids;
  sequence.first_rows = true;
  sequence.next_position = sequence.context.layout.query_position_start;
  sequence.decode_started = StepSequence::Clock::now();
  return ok_status();
}

}  // namespace

bool StepSequence::is_stop(int32_t token) const {
  return std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end();
}

bool StepSequence::ends_with(int32_t token, int64_t generated_count) const {
  return is_stop(token) || generated_count >= spec.generation.max_tokens;
}

bool StepSequence::own_tokens_may_leave_host() const {
  const ShardLayout& layout = context.layout;
  return !layout.window.bounded() && layout.skip_softmax.prefill_scale_factor == 0 &&
         layout.skip_softmax.decode_scale_factor == 0 && !(context.shard != nullptr && context.shard->selects_keys());
}

bool StepSequence::own_tokens_may_move() const {
  const EncodedContext* encoded = own_context != nullptr ? own_context.get() : kept.get();
  if (!own_tokens_may_leave_host() || encoded == nullptr) return false;
  const auto host = static_cast<size_t>(context.layout.query_host);
  return host < encoded->shard_tokens.size() && encoded->shard_tokens[host] > 0;
}

int64_t StepSequence::slowest_chunks() const {
  return rank_chunks.empty() ? 0 : *std::max_element(rank_chunks.begin(), rank_chunks.end());
}

Result<std::unique_ptr<StepSequence>> admit_sequence(const AdmissionContext& engine, const SequenceSpec& spec) {
  const LlamaConfig& config = engine.model.config();
  auto sequence = std::make_unique<StepSequence>();
  sequence->spec = spec;
  sequence->admitted_at = StepSequence::Clock::now();
  if (spec.own_host >= engine.comm.size()) {
    return invalid_argument("own_host: " + std::to_string(spec.own_host) + " is not a rank of " +
                            std::to_string(engine.comm.size()));
  }
  if (Status s = check_tokens("context", spec.context_ids, config.vocab_size); !s.ok()) return s;
  if (Status s = check_tokens("query", spec.query_ids, config.vocab_size); !s.ok()) return s;
  sequence->stop_ids = spec.generation.stop_token_ids;
  if (!spec.generation.ignore_eos) {
    sequence->stop_ids.insert(sequence->stop_ids.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  }

  if (!spec.context_id.empty()) {
    if (sequence->context_only()) return invalid_argument("keep_as: '" + spec.keep_as + "' needs an inline context");
    if (!spec.context_ids.empty()) {
      return invalid_argument("context_id: '" + spec.context_id + "' and inline context tokens are exclusive");
    }
    std::optional<ContextView> view = engine.find_context(spec.context_id);
    if (!view) return not_found("context_id: '" + spec.context_id + "' is not an encoded context");
    if (Status s = check_generation(config, spec, view->layout.query_position_start); !s.ok()) return s;
    sequence->context = *view;
    sequence->kept = engine.kept_context(spec.context_id);
    sequence->borrowed_id = spec.context_id;
    if (engine.comm.rank() == 0) sequence->sampler.emplace(spec.generation.sampling);
    if (Status s = start_decoding(engine.model, engine.comm, *sequence); !s.ok()) return s;
    return sequence;
  }

  Result<BlockPlan> plan = build_block_plan(spec.context_ids, engine.comm.size(), spec.attention, engine.sentence_ends);
  if (!plan.ok()) return plan.status();
  if (!sequence->context_only()) {
    if (Status s = check_generation(config, spec, plan->query_position_start); !s.ok()) return s;
    if (engine.comm.rank() == 0) sequence->sampler.emplace(spec.generation.sampling);
  }
  const bool rocket = spec.attention.sparse.algorithm == "rocket";
  if (rocket) {
    if (Status s = engine.model.supports_rocket(); !s.ok()) return s;
    RocketConfig& budget = sequence->spec.attention.sparse.rocket;
    budget = rocket::config_for_request(budget, static_cast<int64_t>(spec.context_ids.size() + spec.query_ids.size()),
                                        spec.generation.max_tokens, config.head_dim);
    if (Status s = check_rocket_plan(*plan, budget); !s.ok()) return s;
  }

  auto context = std::make_unique<EncodedContext>();
  context->layout = ShardLayout::of(*plan);
  context->algorithm = plan->algorithm;
  context->context_tokens = static_cast<int64_t>(spec.context_ids.size());
  if (spec.attention.sparse.algorithm == "skip_softmax") context->layout.skip_softmax = spec.attention.sparse.skip_softmax;
  // RocketKV's stage 1 runs the query once over the full shard before compacting it (its KV is
  // dropped again): the query host keeps room for it.
  const bool host = engine.comm.rank() == plan->query_host;
  const auto room = static_cast<int64_t>(rocket && host ? spec.query_ids.size() : 0);
  Result<std::unique_ptr<KvShard>> shard =
      engine.model.new_shard(plan->ranks[static_cast<size_t>(engine.comm.rank())].shard.size() + room);
  if (!shard.ok()) return shard.status();
  context->shard = std::move(*shard);

  StepSequence* raw = sequence.get();
  BlockProgress progress = [raw](int block, int done, int total) { raw->blocks_encoded.push_back({block, done, total}); };
  const WindowRecording window =
      rocket ? WindowRecording{sequence->spec.attention.sparse.rocket.window_size, &sequence->rocket_window}
             : WindowRecording{};
  Result<std::unique_ptr<Phase1Job>> job =
      Phase1Job::start(engine.model, *plan, engine.comm, *context->shard, context->layout.skip_softmax.prefill_scale_factor,
                       window, engine.chunk_limit, std::move(progress));
  if (!job.ok()) return job.status();
  for (int r = 0; r < engine.comm.size(); ++r) {
    sequence->rank_chunks.push_back(Phase1Job::chunk_count(*plan, r, engine.chunk_limit));
  }
  sequence->job = std::move(*job);
  sequence->plan = std::move(*plan);
  sequence->own_context = std::move(context);
  return sequence;
}

Status finish_encoding(EngineModel& model, Communicator& comm, StepSequence& sequence) {
  EncodedContext& context = *sequence.own_context;
  if (sequence.job) {
    sequence.phase1 = sequence.job->stats();
    sequence.job.reset();
  }
  Phase1Stats& phase1 = sequence.phase1;
  phase1.shard_tokens = context.shard->tokens();
  phase1.shard_bytes = context.shard->bytes();
  auto wall = gather_one(comm, phase1.wall_seconds);
  auto compute = gather_one(comm, phase1.compute_seconds);
  auto tokens = gather_one(comm, phase1.shard_tokens);
  auto bytes = gather_one(comm, phase1.shard_bytes);
  auto tiles = gather_one(comm, phase1.skip_softmax_tiles);
  for (const Status* s : {&wall.status(), &compute.status(), &tokens.status(), &bytes.status(), &tiles.status()}) {
    if (!s->ok()) return *s;
  }
  for (const SkipSoftmaxTiles& t : *tiles) context.phase1_skip_softmax_tiles += t;
  // In the stats too: a request cut short after Phase 1 (a stop string, a cancel) reports them
  // from there, with no context event.
  sequence.stats.phase1_skip_softmax_tiles = context.phase1_skip_softmax_tiles;
  context.phase1_rank_wall_seconds = std::move(*wall);
  context.phase1_rank_compute_seconds = std::move(*compute);
  context.shard_tokens = std::move(*tokens);
  context.shard_bytes = std::move(*bytes);
  sequence.stats.phase1_seconds = seconds_between(sequence.admitted_at, StepSequence::Clock::now());
  sequence.context = {context.layout, context.shard.get()};
  if (sequence.context_only()) return ok_status();
  return start_decoding(model, comm, sequence);
}

Status run_rocket_stage1(EngineModel& model, Communicator& comm, StepSequence& sequence) {
  // Stage 1 is part of encoding the context: its time counts in Phase 1's.
  const auto start = StepSequence::Clock::now();
  const double cpu_start = process_cpu_seconds();
  EncodedContext& context = *sequence.own_context;
  sequence.phase1 = sequence.job->stats();
  sequence.job.reset();  // it refers to the shard that compaction replaces
  Result<std::unique_ptr<KvShard>> compacted =
      rocket_stage1(model, comm, *sequence.plan, sequence.spec.attention.sparse.rocket, sequence.rocket_window,
                    sequence.spec.query_ids, *context.shard);
  if (!compacted.ok()) return compacted.status();
  context.shard = std::move(*compacted);
  sequence.phase1.wall_seconds += seconds_between(start, StepSequence::Clock::now());
  sequence.phase1.compute_seconds += process_cpu_seconds() - cpu_start;
  return finish_encoding(model, comm, sequence);
}

}  // namespace star
