#include "star/server/engine_loop.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace star::server {

namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Rank 0's Phase 1 progress, as the channel carries it.
BlockProgress progress_to(RequestChannel& channel, int context_blocks) {
  return [&channel, context_blocks](int, int done, int total) {
    channel.push(Phase1Progress{done, total, context_blocks});
  };
}

// What a request learns when the ranks fail under it (a collective failed): the server is going
// away, so UNAVAILABLE (retry elsewhere or later), not a fault of the request.
Status ranks_failed(const Status& s) {
  if (s.code() != StatusCode::kInternal) return s;
  return unavailable("the ranks failed during the request: " + s.message());
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

EngineLoop::EngineLoop(RankEngine& rank, WorkQueue& queue, ContextRegistry& registry,
                       std::function<Status()> wake_workers)
    : rank_(rank), queue_(queue), registry_(registry), wake_workers_(std::move(wake_workers)) {}

Status EngineLoop::send(const EngineCommand& command) {
  if (wake_workers_) {
    if (Status s = wake_workers_(); !s.ok()) return s;
  }
  if (Status s = send_command(rank_.comm(), command); !s.ok()) return s;
  rank_.release(command.release);
  return ok_status();
}

Status EngineLoop::run() {
  while (std::shared_ptr<Job> job = queue_.pop()) {
    Status s = std::visit(
        [&](auto& work) -> Status {
          using W = std::decay_t<decltype(work)>;
          if constexpr (std::is_same_v<W, GenerateWork>) return run_generate(*job, work);
          if constexpr (std::is_same_v<W, CreateContextWork>) return run_create_context(*job, work);
          if constexpr (std::is_same_v<W, ReleaseWork>) return run_release();
        },
        job->work);
    if (!std::holds_alternative<ReleaseWork>(job->work)) queue_.ended();
    if (!s.ok()) {
      spdlog::error("engine: {}; stopping", s.to_string());
      return s;
    }
  }
  EngineCommand shutdown;
  shutdown.op = EngineCommand::Op::kShutdown;
  return send(shutdown);
}

Status EngineLoop::run_release() { return release_now(registry_.take_released()); }

Status EngineLoop::release_now(std::vector<std::string> ids) {
  if (ids.empty()) return ok_status();
  EngineCommand command;
  command.op = EngineCommand::Op::kRelease;
  command.release = std::move(ids);
  return send(command);
}

Status EngineLoop::run_generate(Job& job, GenerateWork& work) {
  RequestChannel& channel = *job.channel;
  if (channel.cancelled()) {
    channel.push(cancelled_before_start(job));
    return ok_status();
  }
  GenerateSummary summary;
  summary.queue_seconds = seconds_between(job.accepted, Clock::now());
  summary.prompt_tokens = static_cast<int64_t>(work.query_ids.size());
  summary.seed = work.generation.sampling.seed;

  EngineCommand command;
  command.op = EngineCommand::Op::kGenerate;
  // Releases first: a context deleted from here on stays on the ranks until the next command.
  command.release = registry_.take_released();
  command.query_ids = std::move(work.query_ids);
  command.generation = std::move(work.generation);
  // The handler finds stop strings in the text it decodes (AnswerText) and cancels the request.
  command.generation.stop_strings.clear();
  std::optional<ContextEntry> encoded;
  if (!work.context_id.empty()) {
    encoded = registry_.find(work.context_id);
    if (!encoded) {
      channel.push(not_found("session.context_id: no context '" + work.context_id +
                             "' (it was deleted or evicted before the request ran)"));
      return release_now(std::move(command.release));
    }
  } else if (!work.context_ids.empty()) {
    if (std::optional<std::string> same = registry_.find_same(work.context_ids, work.attention)) {
      encoded = registry_.find(*same);
    }
  }
  if (encoded) {
    command.context_id = encoded->id;
    registry_.touch(encoded->id);
    summary.context_id = encoded->id;
    summary.cached_tokens = encoded->tokens();
    summary.prompt_tokens += encoded->tokens();
  } else {
    summary.prompt_tokens += static_cast<int64_t>(work.context_ids.size());
    command.context_ids = std::move(work.context_ids);
    command.attention = work.attention;
  }
  if (Status s = send(command); !s.ok()) {
    channel.push(ranks_failed(s));
    return s;
  }

  // Stop token ids end the answer without being part of it: the handler keeps them out of the stream.
  std::vector<int32_t> stop_ids = command.generation.stop_token_ids;
  if (!command.generation.ignore_eos) {
    const auto& eos = rank_.model().llama->config().eos_token_ids;
    stop_ids.insert(stop_ids.end(), eos.begin(), eos.end());
  }
  int64_t generated = 0;
  TokenSink sink = [&](int32_t id, std::string_view) {
    SampledTokens tokens;
    tokens.ids.push_back(id);
    tokens.ends_with_stop_id = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
    tokens.ends_answer = tokens.ends_with_stop_id || ++generated >= command.generation.max_tokens;
    channel.push(std::move(tokens));
    return !channel.cancelled();
  };
  Result<GenerateOutcome> outcome = rank_.generate(command, progress_to(channel, work.context_blocks), sink);
  if (!outcome.ok()) {
    channel.push(ranks_failed(outcome.status()));
    return outcome.status().code() == StatusCode::kInternal ? outcome.status() : ok_status();
  }
  const GenerationResult& g = outcome->generation;
  summary.finish_reason = g.finish_reason;
  summary.completion_tokens = static_cast<int64_t>(g.tokens.size());
  summary.phase1_seconds = outcome->phase1_seconds;
  summary.first_token_seconds = outcome->phase1_seconds + g.first_token_seconds;
  summary.decode_seconds = g.decode_seconds;
  summary.phase1_skip_softmax_tiles = outcome->phase1_skip_softmax_tiles;
  summary.phase2_skip_softmax_tiles = g.skip_softmax_tiles;
  channel.push(std::move(summary));
  return ok_status();
}

Status EngineLoop::run_create_context(Job& job, CreateContextWork& work) {
  RequestChannel& channel = *job.channel;
  if (channel.cancelled()) {
    channel.push(cancelled_before_start(job));
    return ok_status();
  }
  EngineCommand command;
  command.op = EngineCommand::Op::kCreateContext;
  command.context_id = registry_.next_id();
  command.attention = work.attention;
  command.reserve_tokens = work.reserve_tokens;
  auto context_ids = std::make_shared<const std::vector<int32_t>>(std::move(work.context_ids));
  command.context_ids = *context_ids;
  command.release = registry_.take_released();
  if (Status s = send(command); !s.ok()) {
    channel.push(ranks_failed(s));
    return s;
  }

  const Clock::time_point started = Clock::now();
  Status admitted;
  AdmitPolicy admit = [&](const Result<EncodedContext>& encoded) {
    AdmitDecision decision;
    if (!encoded.ok()) return decision;
    if (channel.cancelled()) {
      // Nobody would learn its id: keeping it would only take room.
      admitted = Status(StatusCode::kCancelled, "cancelled during Phase 1; the context was not kept");
      return decision;
    }
    ContextEntry entry;
    entry.id = command.context_id;
    entry.context_ids = context_ids;
    entry.attention = command.attention;
    entry.rank_bytes.assign(encoded->shard_bytes.begin(), encoded->shard_bytes.end());
    entry.phase1_seconds = seconds_between(started, Clock::now());
    admitted = registry_.admit(std::move(entry));
    decision.keep = admitted.ok();
    decision.release = registry_.take_released();
    return decision;
  };
  Result<const EncodedContext*> kept = rank_.create_context(command, progress_to(channel, work.context_blocks), admit);
  if (!kept.ok()) {
    channel.push(admitted.ok() ? ranks_failed(kept.status()) : admitted);
    return kept.status().code() == StatusCode::kInternal ? kept.status() : ok_status();
  }
  channel.push(ContextCreated{command.context_id});
  return ok_status();
}

}  // namespace star::server
