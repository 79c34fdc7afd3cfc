#include "star/server/engine_loop.h"

#include <chrono>
#include <optional>
#include <variant>

#include <spdlog/spdlog.h>

namespace star::server {

namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// What a request learns when the ranks fail under it (a collective failed): the server is going
// away, so UNAVAILABLE (retry elsewhere or later), not a fault of the request.
Status ranks_failed(const Status& s) {
  if (s.code() != StatusCode::kInternal) return s;
  return unavailable("the ranks failed during the request: " + s.message());
}

const std::vector<int64_t>& kv_rank_bytes(const Job& job) {
  if (const auto* work = std::get_if<GenerateWork>(&job.work)) return work->kv_rank_bytes;
  return std::get<CreateContextWork>(job.work).kv_rank_bytes;
}

OwnTokens own_tokens(const Job& job) {
  if (const auto* work = std::get_if<GenerateWork>(&job.work)) return work->own;
  return {};
}

// The engine's timings of a sequence, as the summary reports them.
void add_timings(const SequenceStats& stats, GenerateSummary& summary) {
  summary.phase1_seconds = stats.phase1_seconds;
  summary.first_token_seconds = stats.phase1_seconds + stats.first_token_seconds;
  summary.decode_seconds = stats.decode_seconds;
  summary.phase2_skip_softmax_tiles = stats.skip_softmax_tiles;
  summary.phase1_skip_softmax_tiles = stats.phase1_skip_softmax_tiles;
}

}  // namespace

ChannelEvent cancelled_before_start(const Job& job) {
  if (const auto* work = std::get_if<GenerateWork>(&job.work)) {
    GenerateSummary summary;
    summary.finish_reason = FinishReason::kCancelled;
    summary.prompt_tokens = static_cast<int64_t>(work->context_ids.size() + work->query_ids.size());
    summary.queue_seconds = seconds_between(job.accepted, Clock::now());
    summary.seed = work->generation.sampling.seed;
    return summary;
  }
  return Status(StatusCode::kCancelled, "cancelled before Phase 1 started");
}

EngineLoop::EngineLoop(StepEngine& engine, Communicator& comm, WorkQueue& queue, ContextRegistry& registry,
                       const SchedulerLimits& limits, std::function<Status()> wake_workers, StepWatch& watch)
    : engine_(engine),
      comm_(comm),
      queue_(queue),
      registry_(registry),
      scheduler_(limits, comm.size()),
      wake_workers_(std::move(wake_workers)),
      watch_(watch) {}

Status EngineLoop::run() {
  for (;;) {
    const bool idle = engine_.idle() && running_.empty() && next_.sampled.empty() && next_.keep.empty();
    // An idle engine sleeps until a request (or a release) arrives; false: closed and drained.
    if (idle && !queue_.wait_for_work()) break;
    StepMessage message = std::move(next_);
    next_ = {};
    finish_cancelled(message);
    admit(message);
    move_own_tokens(message);
    message.release = registry_.take_released();
    watch_.begin(++steps_, static_cast<int64_t>(running_.size()));
    Result<std::vector<SequenceEvent>> events = step(message, idle);
    watch_.end();
    if (!events.ok()) return fail_running(events.status());
    deliver(*events);
  }
  StepMessage shutdown;
  shutdown.shutdown = true;
  if (wake_workers_) {
    if (Status s = wake_workers_(); !s.ok()) return s;
  }
  return exchange_step(comm_, shutdown).status();
}

Result<std::vector<SequenceEvent>> EngineLoop::step(const StepMessage& message, bool after_idle) {
  if (after_idle && wake_workers_) {
    if (Status s = wake_workers_(); !s.ok()) return s;
  }
  Result<StepMessage> sent = exchange_step(comm_, message);
  if (!sent.ok()) return sent.status();
  // The ranks keep them from this message on: sessions on them may come.
  for (auto& [channel, id] : created_) channel->push(ContextCreated{id});
  created_.clear();
  return engine_.step(*sent);
}

Status EngineLoop::fail_running(const Status& why) {
  spdlog::error("engine: {}; stopping", why.to_string());
  for (auto& [id, sequence] : running_) sequence.job->channel->push(ranks_failed(why));
  return why;
}

void EngineLoop::end(int64_t id) {
  scheduler_.finish(id);
  if (auto it = running_.find(id); it != running_.end() && !it->second.reads_context.empty()) {
    registry_.end_query(it->second.reads_context);
  }
  running_.erase(id);
  queue_.ended();
}

void EngineLoop::finish_cancelled(StepMessage& message) {
  std::vector<int64_t> cancelled;
  for (auto& [id, sequence] : running_) {
    if (sequence.job->channel->cancelled()) cancelled.push_back(id);
  }
  for (int64_t id : cancelled) {
    Sequence& sequence = running_.at(id);
    message.finished.push_back(id);
    // Its last token needs no forward now.
    std::erase_if(message.sampled, [id](const auto& sampled) { return sampled.first == id; });
    if (sequence.keep_as.empty()) {
      sequence.summary.finish_reason = FinishReason::kCancelled;
      if (const SequenceStats* stats = engine_.stats(id)) add_timings(*stats, sequence.summary);
      sequence.job->channel->push(std::move(sequence.summary));
    } else {
      sequence.job->channel->push(Status(StatusCode::kCancelled, "cancelled during Phase 1; the context was not kept"));
    }
    end(id);
  }
}

void EngineLoop::admit(StepMessage& message) {
  std::vector<std::shared_ptr<Job>> waiting;
  std::vector<std::vector<int64_t>> needs;
  std::vector<OwnTokens> owns;
  for (std::shared_ptr<Job>& job : queue_.waiting()) {
    // A release only wakes the engine: the released ids go with every message.
    if (std::holds_alternative<ReleaseWork>(job->work)) {
      queue_.take(job);
      continue;
    }
    needs.push_back(kv_rank_bytes(*job));
    owns.push_back(own_tokens(*job));
    waiting.push_back(std::move(job));
  }
  const std::vector<BatchScheduler::Verdict> verdicts = scheduler_.decide(needs, owns);
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (verdicts[i].kind == BatchScheduler::Verdict::Kind::kWait) continue;
    // A handler may have taken its cancelled job out meanwhile.
    if (!queue_.take(waiting[i])) continue;
    Job& job = *waiting[i];
    if (verdicts[i].kind == BatchScheduler::Verdict::Kind::kRefuse) {
      job.channel->push(verdicts[i].refusal);
      queue_.ended();
      continue;
    }
    if (job.channel->cancelled()) {
      job.channel->push(cancelled_before_start(job));
      queue_.ended();
      continue;
    }
    const int64_t id = next_id_++;
    Sequence sequence;
    sequence.job = waiting[i];
    Result<SequenceSpec> spec = sequence_of(id, job, sequence);
    if (!spec.ok()) {
      job.channel->push(spec.status());
      queue_.ended();
      continue;
    }
    const BatchScheduler::Verdict& verdict = verdicts[i];
    if (verdict.own_rank >= 0 && verdict.own_rank != owns[i].query_host) spec->own_host = verdict.own_rank;
    message.admitted.push_back(std::move(*spec));
    scheduler_.start(id, verdict.rank_bytes, verdict.own_rank, owns[i].bytes, owns[i].movable);
    running_.emplace(id, std::move(sequence));
  }
}

void EngineLoop::move_own_tokens(StepMessage& message) {
  if (!engine_.moves_own_tokens()) return;
  const OwnTokenLoads loads = engine_.own_token_loads();
  std::vector<BatchScheduler::OwnLoad> own;
  for (const OwnTokenLoads::Sequence& s : loads.decoding) own.push_back({s.id, s.host, s.load, s.may_move});
  for (const BatchScheduler::OwnMove& move : scheduler_.own_moves(loads.chunk, loads.chunk_steps_left, own)) {
    scheduler_.move_own(move.id, move.rank);
    message.moved.emplace_back(move.id, move.rank);
  }
}

Result<SequenceSpec> EngineLoop::sequence_of(int64_t id, Job& job, Sequence& sequence) {
  SequenceSpec spec;
  spec.id = id;
  sequence.started = Clock::now();
  if (auto* work = std::get_if<CreateContextWork>(&job.work)) {
    sequence.keep_as = registry_.next_id();
    sequence.context_ids = std::make_shared<const std::vector<int32_t>>(std::move(work->context_ids));
    sequence.attention = work->attention;
    sequence.context_blocks = work->context_blocks;
    spec.context_ids = *sequence.context_ids;
    spec.attention = work->attention;
    spec.keep_as = sequence.keep_as;
    return spec;
  }
  auto& work = std::get<GenerateWork>(job.work);
  GenerateSummary& summary = sequence.summary;
  summary.queue_seconds = seconds_between(job.accepted, sequence.started);
  summary.prompt_tokens = static_cast<int64_t>(work.query_ids.size());
  summary.seed = work.generation.sampling.seed;
  sequence.context_blocks = work.context_blocks;
  std::optional<ContextEntry> encoded;
  if (!work.context_id.empty()) {
    encoded = registry_.find(work.context_id);
    if (!encoded) {
      return not_found("session.context_id: no context '" + work.context_id +
                       "' (it was deleted or evicted before the request ran)");
    }
  } else if (!work.context_ids.empty()) {
    if (std::optional<std::string> same = registry_.find_same(work.context_ids, work.attention)) {
      encoded = registry_.find(*same);
    }
  }
  if (encoded) {
    spec.context_id = encoded->id;
    registry_.start_query(encoded->id);
    sequence.reads_context = encoded->id;
    summary.context_id = encoded->id;
    summary.cached_tokens = encoded->tokens();
    summary.prompt_tokens += encoded->tokens();
  } else {
    summary.prompt_tokens += static_cast<int64_t>(work.context_ids.size());
    spec.context_ids = std::move(work.context_ids);
    spec.attention = work.attention;
  }
  spec.query_ids = std::move(work.query_ids);
  spec.generation = std::move(work.generation);
  // The handler finds stop strings in the text it decodes (AnswerText) and cancels the request.
  spec.generation.stop_strings.clear();
  return spec;
}

void EngineLoop::deliver(const std::vector<SequenceEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    const SequenceEvent& event = events[i];
    auto it = running_.find(event.id);
    if (it == running_.end()) continue;
    Sequence& sequence = it->second;
    RequestChannel& channel = *sequence.job->channel;
    switch (event.kind) {
      case SequenceEvent::Kind::kPhase1Progress:
        channel.push(Phase1Progress{event.blocks_done, event.blocks_total, sequence.context_blocks});
        break;
      case SequenceEvent::Kind::kToken: {
        next_.sampled.emplace_back(event.id, event.token);
        SampledTokens tokens;
        tokens.ids.push_back(event.token);
        tokens.ends_with_stop_id = event.is_stop;
        // The step's kDone for this sequence follows its last token.
        tokens.ends_answer = i + 1 < events.size() && events[i + 1].id == event.id &&
                             events[i + 1].kind == SequenceEvent::Kind::kDone;
        ++sequence.summary.completion_tokens;
        channel.push(std::move(tokens));
        break;
      }
      case SequenceEvent::Kind::kDone: {
        GenerateSummary& summary = sequence.summary;
        summary.finish_reason = event.finish_reason;
        add_timings(event.stats, summary);
        channel.push(std::move(summary));
        end(event.id);
        break;
      }
      case SequenceEvent::Kind::kContextEncoded:
        on_context_encoded(sequence, event);
        end(event.id);
        break;
      case SequenceEvent::Kind::kFailed:
        channel.push(event.error);
        end(event.id);
        break;
    }
  }
}

void EngineLoop::on_context_encoded(Sequence& sequence, const SequenceEvent& event) {
  RequestChannel& channel = *sequence.job->channel;
  if (channel.cancelled()) {
    // Nobody would learn its id: keeping it would only take room.
    channel.push(Status(StatusCode::kCancelled, "cancelled during Phase 1; the context was not kept"));
    return;
  }
  ContextEntry entry;
  entry.id = sequence.keep_as;
  entry.context_ids = sequence.context_ids;
  entry.attention = sequence.attention;
  if (event.context) entry.rank_bytes.assign(event.context->shard_bytes.begin(), event.context->shard_bytes.end());
  entry.phase1_seconds = seconds_between(sequence.started, Clock::now());
  if (Status admitted = registry_.admit(std::move(entry)); !admitted.ok()) {
    channel.push(admitted);
    return;
  }
  next_.keep.push_back(sequence.keep_as);
  created_.emplace_back(sequence.job->channel, sequence.keep_as);
}

}  // namespace star::server
