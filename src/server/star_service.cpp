#include "star/server/star_service.h"

#include <thread>

#include <spdlog/spdlog.h>

#include "star/server/answer_text.h"
#include "star/server/engine_loop.h"
#include "star/server/proto_convert.h"
#include "star/server/request_parsing.h"
#include "star/tokenizer/chat_format.h"

namespace star::server {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxRequestIdBytes = 128;

// Compares without an early exit, so the time taken says nothing about where a guess went wrong.
bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

grpc::Status cancelled_status(CancelReason reason) {
  switch (reason) {
    case CancelReason::kClient: return {grpc::StatusCode::CANCELLED, "cancelled by the client"};
    case CancelReason::kDeadline: return {grpc::StatusCode::DEADLINE_EXCEEDED, "the request's deadline passed"};
    case CancelReason::kShutdown:
      return {grpc::StatusCode::UNAVAILABLE, "the server is shutting down; the request was stopped at its shutdown timeout"};
    case CancelReason::kAbort:
    case CancelReason::kStopString:
    case CancelReason::kNone: break;
  }
  return grpc::Status::OK;
}

// Whether the job's final event says it was cut short (before or during its work).
bool cut_short(const ChannelEvent& event) {
  if (const Status* error = std::get_if<Status>(&event)) return error->code() == StatusCode::kCancelled;
  if (const auto* summary = std::get_if<GenerateSummary>(&event)) {
    return summary->finish_reason == FinishReason::kCancelled;
  }
  return false;
}

// A job cut by the server's shutdown ends UNAVAILABLE (try again, elsewhere or later) with no final
// answer: a client must not take a truncated answer for a finished one.
bool cut_by_shutdown(const ChannelEvent& event, CancelReason reason) {
  return reason == CancelReason::kShutdown && cut_short(event);
}

// The status a call ends with after the job's final event. A job cut short ends with the reason it
// was cut for (a client cancel CANCELLED, the shutdown UNAVAILABLE), whichever event it ended on.
grpc::Status final_status(const ChannelEvent& event, CancelReason reason) {
  if (const Status* error = std::get_if<Status>(&event)) {
    if (cut_short(event) && reason != CancelReason::kNone && reason != CancelReason::kAbort &&
        reason != CancelReason::kStopString) {
      return cancelled_status(reason);
    }
    return to_grpc_status(*error);
  }
  return cancelled_status(reason);
}

// Past --max-request-bytes (and within gRPC's own cap, see StarServer::start). No field is to
// blame, and a retry of the same request cannot succeed: INVALID_ARGUMENT.
grpc::Status check_request_size(const google::protobuf::Message& request, int64_t limit) {
  const auto bytes = static_cast<int64_t>(request.ByteSizeLong());
  if (bytes <= limit) return grpc::Status::OK;
  return {grpc::StatusCode::INVALID_ARGUMENT, "the request is " + std::to_string(bytes) +
                                                  " bytes, more than the server's limit of " + std::to_string(limit) +
                                                  " bytes per request (--max-request-bytes)"};
}

void fill_progress(const Phase1Progress& p, v1::Phase1Progress& out) {
  out.set_blocks_done(p.blocks_done);
  out.set_blocks_total(p.blocks_total);
  out.set_context_blocks(p.context_blocks);
}

void fill_context_info(const ContextEntry& e, v1::ContextInfo& out) {
  out.set_context_id(e.id);
  out.set_context_tokens(e.tokens());
  *out.mutable_attention() = attention_to_proto(e.attention);
  for (int64_t bytes : e.rank_bytes) out.add_rank_bytes(bytes);
  out.set_phase1_seconds(e.phase1_seconds);
  out.set_queries(e.queries);
  out.set_idle_seconds(std::chrono::duration<double>(Clock::now() - e.last_used).count());
}

// The client a call's streams count for: its peer, or the client a trusted proxy forwards.
std::string client_of(const grpc::ServerContext& context, const TrustedProxies& trusted) {
  std::optional<std::string_view> forwarded;
  const auto [first, end] = context.client_metadata().equal_range(kForwardedForKey);
  for (auto it = first; it != end; ++it) forwarded = std::string_view(it->second.data(), it->second.size());
  return client_of_call(context.peer(), forwarded, trusted);
}

}  // namespace

StarService::StarService(const ServerOptions& options, TrustedProxies proxies, int ranks, WorkQueue& queue,
                         ContextRegistry& contexts)
    : options_(options),
      proxies_(std::move(proxies)),
      ranks_(ranks),
      queue_(queue),
      contexts_(contexts),
      streams_(options.limits.max_streams_per_client) {}

void StarService::start_serving(const RuntimeModel& model) {
  model_.store(&model, std::memory_order_release);
  State expected = State::kLoading;
  state_.compare_exchange_strong(expected, State::kServing);
}

void StarService::stop_serving(SteadyClock::time_point deadline) {
  shutdown_deadline_.store(deadline.time_since_epoch().count(), std::memory_order_release);
  // A failed server stays failed: its answers say why.
  State current = state_.load();
  while (current != State::kFailed) {
    if (state_.compare_exchange_weak(current, State::kStopping)) break;
  }
}

void StarService::fail(const std::string& why) {
  {
    std::lock_guard lock(failure_mutex_);
    if (failure_.empty()) failure_ = why;
  }
  state_.store(State::kFailed);
}

grpc::Status StarService::failed_status() const {
  std::lock_guard lock(failure_mutex_);
  return {grpc::StatusCode::UNAVAILABLE, "the server cannot serve any more: " + failure_};
}

bool StarService::wait_idle(std::chrono::milliseconds timeout) const {
  const auto deadline = SteadyClock::now() + timeout;
  while (active_.load() > 0) {
    if (SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(options_.cancel_poll);
  }
  return true;
}

bool StarService::shutdown_deadline_passed() const {
  if (state_.load() != State::kStopping) return false;
  return SteadyClock::now().time_since_epoch().count() >= shutdown_deadline_.load(std::memory_order_acquire);
}

grpc::Status StarService::admit_call(const grpc::ServerContext& context) const {
  if (!options_.api_key.empty()) {
    const auto& metadata = context.client_metadata();
    auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return {grpc::StatusCode::UNAUTHENTICATED, "missing 'authorization: Bearer <key>' metadata"};
    }
    const std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    if (!value.starts_with(kBearer) || !same_secret(value.substr(kBearer.size()), options_.api_key)) {
      return {grpc::StatusCode::UNAUTHENTICATED, "wrong API key in the 'authorization' metadata"};
    }
  }
  switch (state_.load()) {
    case State::kLoading: return {grpc::StatusCode::UNAVAILABLE, "the model is still loading"};
    case State::kStopping: return {grpc::StatusCode::UNAVAILABLE, "the server is shutting down"};
    case State::kFailed: return failed_status();
    case State::kServing: break;
  }
  return grpc::Status::OK;
}

RequestDefaults StarService::defaults() const {
  return {.model = *model_.load(std::memory_order_acquire),
          .attention = options_.attention,
          .ranks = ranks_,
          .max_tokens = options_.default_max_tokens,
          .reserve_tokens = options_.context_reserve_tokens,
          .limits = options_.limits,
          .context_cache_bytes = options_.context_cache_bytes,
          .scheduler = options_.scheduler};
}

template <typename Emit>
grpc::Status StarService::run_job(grpc::ServerContext& context, const std::shared_ptr<Job>& job, Emit emit) {
  RequestChannel& channel = *job->channel;
  if (Status s = queue_.push(job); !s.ok()) return to_grpc_status(s);
  active_.fetch_add(1);
  struct Finish {
    StarService& service;
    ~Finish() {
      service.active_.fetch_sub(1);
      service.finished_.fetch_add(1);
    }
  } finish{*this};

  for (;;) {
    // The engine thread may be stuck in a collective with a lost rank: answer without it.
    if (state_.load() == State::kFailed) {
      channel.cancel(CancelReason::kShutdown);
      return failed_status();
    }
    for (ChannelEvent& event : channel.wait(options_.cancel_poll)) {
      const bool last = is_final(event);
      if (last && cut_by_shutdown(event, channel.cancel_reason())) return cancelled_status(CancelReason::kShutdown);
      if (!emit(event) && !last) channel.cancel(CancelReason::kClient);
      if (last) return final_status(event, channel.cancel_reason());
    }
    if (!channel.cancelled()) {
      if (context.IsCancelled()) {
        const bool expired = std::chrono::system_clock::now() >= context.deadline();
        channel.cancel(expired ? CancelReason::kDeadline : CancelReason::kClient);
      } else if (shutdown_deadline_passed()) {
        channel.cancel(CancelReason::kShutdown);
      }
    }
    const CancelReason reason = channel.cancel_reason();
    if (reason == CancelReason::kNone) continue;
    if (queue_.remove(job)) {
      ChannelEvent event = cancelled_before_start(*job);
      if (cut_by_shutdown(event, reason)) return cancelled_status(reason);
      emit(event);
      return final_status(event, reason);
    }
    // Nobody is left to read the rest; the engine ends the sequence at its next step all the same.
    if (reason == CancelReason::kClient || reason == CancelReason::kDeadline) return cancelled_status(reason);
  }
}

grpc::Status StarService::Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                                   grpc::ServerWriter<v1::GenerateResponse>* writer) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  Result<ClientStreams::Slot> stream = streams_.open(client_of(*context, proxies_));
  if (!stream.ok()) return to_grpc_status(stream.status());
  if (grpc::Status s = check_request_size(*request, options_.limits.max_request_bytes); !s.ok()) return s;
  if (request->request_id().size() > kMaxRequestIdBytes) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "request_id: longer than " + std::to_string(kMaxRequestIdBytes) + " bytes"};
  }
  Result<GenerateWork> work = parse_generate_request(*request, defaults(), contexts_);
  if (!work.ok()) return to_grpc_status(work.status());

  AnswerText answer(*model_.load(std::memory_order_acquire)->tokenizer, work->generation.stop_strings);
  auto job = std::make_shared<Job>();
  job->work = std::move(*work);
  job->channel = std::make_shared<RequestChannel>();
  grpc::Status registered;
  job->request_id = register_request(request->request_id(), job->channel, registered);
  if (!registered.ok()) return registered;
  struct Unregister {
    StarService& service;
    const std::string& id;
    ~Unregister() { service.unregister_request(id); }
  } unregister{*this, job->request_id};

  auto emit = [&](const ChannelEvent& event) {
    v1::GenerateResponse response;
    response.set_request_id(job->request_id);
    if (const auto* p = std::get_if<Phase1Progress>(&event)) {
      fill_progress(*p, *response.mutable_progress());
    } else if (const auto* t = std::get_if<SampledTokens>(&event)) {
      GeneratedText text = answer.add(*t);
      // The answer is complete: the engine only has to stop generating.
      if (answer.stopped()) job->channel->cancel(CancelReason::kStopString);
      if (text.token_ids.empty() && text.text.empty()) return true;
      v1::TokenChunk& chunk = *response.mutable_chunk();
      chunk.mutable_token_ids()->Add(text.token_ids.begin(), text.token_ids.end());
      chunk.set_text(std::move(text.text));
    } else if (const auto* d = std::get_if<GenerateSummary>(&event)) {
      v1::GenerateDone& done = *response.mutable_done();
      done.set_finish_reason(finish_reason_to_proto(answer.finish_reason(d->finish_reason)));
      done.mutable_usage()->set_prompt_tokens(d->prompt_tokens);
      done.mutable_usage()->set_cached_tokens(d->cached_tokens);
      done.mutable_usage()->set_completion_tokens(answer.completion_tokens());
      done.mutable_timings()->set_queue_seconds(d->queue_seconds);
      done.mutable_timings()->set_phase1_seconds(d->phase1_seconds);
      done.mutable_timings()->set_time_to_first_token_seconds(d->first_token_seconds);
      done.mutable_timings()->set_decode_seconds(d->decode_seconds);
      done.set_context_id(d->context_id);
      done.set_seed(d->seed);
      for (auto [tiles, phase] : {std::pair{d->phase1_skip_softmax_tiles, done.mutable_sparse_attention()->mutable_phase1()},
                                  std::pair{d->phase2_skip_softmax_tiles, done.mutable_sparse_attention()->mutable_phase2()}}) {
        phase->set_visited(tiles.visited);
        phase->set_skipped(tiles.skipped);
      }
    } else {
      return true;
    }
    return writer->Write(response);
  };
  return run_job(*context, job, emit);
}

grpc::Status StarService::CreateContext(grpc::ServerContext* context, const v1::CreateContextRequest* request,
                                        grpc::ServerWriter<v1::CreateContextResponse>* writer) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  Result<ClientStreams::Slot> stream = streams_.open(client_of(*context, proxies_));
  if (!stream.ok()) return to_grpc_status(stream.status());
  if (grpc::Status s = check_request_size(*request, options_.limits.max_request_bytes); !s.ok()) return s;
  Result<CreateContextWork> work = parse_create_context_request(*request, defaults());
  if (!work.ok()) return to_grpc_status(work.status());
  auto job = std::make_shared<Job>();
  job->work = std::move(*work);
  job->channel = std::make_shared<RequestChannel>();
  auto emit = [&](const ChannelEvent& event) {
    v1::CreateContextResponse response;
    if (const auto* p = std::get_if<Phase1Progress>(&event)) {
      fill_progress(*p, *response.mutable_progress());
    } else if (const auto* created = std::get_if<ContextCreated>(&event)) {
      if (std::optional<ContextEntry> entry = contexts_.find(created->context_id)) {
        fill_context_info(*entry, *response.mutable_context());
      } else {
        response.mutable_context()->set_context_id(created->context_id);
      }
    } else {
      return true;
    }
    return writer->Write(response);
  };
  return run_job(*context, job, emit);
}

grpc::Status StarService::DeleteContext(grpc::ServerContext* context, const v1::DeleteContextRequest* request,
                                        v1::DeleteContextResponse*) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  if (request->context_id().empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "context_id: empty"};
  if (!contexts_.remove(request->context_id())) {
    return {grpc::StatusCode::NOT_FOUND, "context_id: no context '" + request->context_id() + "'"};
  }
  auto release = std::make_shared<Job>();
  release->work = ReleaseWork{};
  // Refused only once shutting down, when every rank drops its contexts anyway.
  if (Status s = queue_.push(release); !s.ok()) spdlog::debug("release not queued: {}", s.to_string());
  return grpc::Status::OK;
}

grpc::Status StarService::ListContexts(grpc::ServerContext* context, const v1::ListContextsRequest*,
                                       v1::ListContextsResponse* response) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  for (const ContextEntry& e : contexts_.list()) fill_context_info(e, *response->add_contexts());
  response->set_cache_bytes_per_rank(contexts_.budget_bytes_per_rank());
  for (int64_t bytes : contexts_.rank_bytes_used()) response->add_rank_bytes_used(bytes);
  return grpc::Status::OK;
}

grpc::Status StarService::Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                                   v1::TokenizeResponse* response) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  if (grpc::Status s = check_request_size(*request, options_.limits.max_request_bytes); !s.ok()) return s;
  const Tokenizer& tokenizer = *model_.load(std::memory_order_acquire)->tokenizer;
  std::vector<int32_t> ids =
      tokenizer.encode(request->text(), {.add_bos = request->add_bos(), .parse_special = request->parse_special()});
  response->mutable_ids()->Add(ids.begin(), ids.end());
  return grpc::Status::OK;
}

grpc::Status StarService::Detokenize(grpc::ServerContext* context, const v1::DetokenizeRequest* request,
                                     v1::DetokenizeResponse* response) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  if (grpc::Status s = check_request_size(*request, options_.limits.max_request_bytes); !s.ok()) return s;
  const RuntimeModel& model = *model_.load(std::memory_order_acquire);
  const std::vector<int32_t> ids(request->ids().begin(), request->ids().end());
  if (Status s = check_token_ids("ids", ids, model.tokenizer->vocab_size()); !s.ok()) return to_grpc_status(s);
  response->set_text(model.tokenizer->decode(ids, /*skip_special=*/!request->keep_special()));
  return grpc::Status::OK;
}

grpc::Status StarService::GetModelInfo(grpc::ServerContext* context, const v1::GetModelInfoRequest*,
                                       v1::ModelInfo* response) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  const RuntimeModel& model = *model_.load(std::memory_order_acquire);
  const LlamaConfig& c = model.llama->config();
  response->set_source(model.source.string());
  response->set_architecture("llama");
  response->set_layers(c.n_layers);
  response->set_hidden_size(c.dim);
  response->set_intermediate_size(c.hidden_dim);
  response->set_attention_heads(c.n_heads);
  response->set_kv_heads(c.n_kv_heads);
  response->set_head_dim(c.head_dim);
  response->set_vocab_size(c.vocab_size);
  response->set_max_position_embeddings(c.max_position_embeddings);
  response->set_bos_token_id(c.bos_token_id);
  response->mutable_eos_token_ids()->Add(c.eos_token_ids.begin(), c.eos_token_ids.end());
  *response->mutable_attention() = attention_to_proto(options_.attention);
  response->set_ranks(ranks_);
  response->set_kv_bytes_per_token(model.engine->kv_bytes_per_token());
  response->set_kv_dtype(kv_dtype_name(model.engine->kv_dtype()));
  response->set_chat_format(chat_format_name(detect_chat_format(model.chat_template)));
  response->set_chat_default_system(chat_default_system(model.chat_template));
  if (c.bos_token_id >= 0) response->set_bos_token(model.tokenizer->token_bytes(c.bos_token_id));
  if (!c.eos_token_ids.empty()) response->set_eos_token(model.tokenizer->token_bytes(c.eos_token_ids[0]));
  response->set_max_tokens_limit(options_.limits.max_tokens);
  return grpc::Status::OK;
}

grpc::Status StarService::GetServerInfo(grpc::ServerContext* context, const v1::GetServerInfoRequest*,
                                        v1::ServerInfo* response) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  response->set_version(STAR_VERSION);
  response->set_ranks(ranks_);
  response->set_queue_capacity(static_cast<int32_t>(queue_.capacity()));
  response->set_queued_requests(static_cast<int32_t>(queue_.size()));
  response->set_active_requests(active_.load());
  response->set_running_requests(static_cast<int32_t>(queue_.running()));
  response->set_requests_served(finished_.load());
  response->set_cache_bytes_per_rank(contexts_.budget_bytes_per_rank());
  for (int64_t bytes : contexts_.rank_bytes_used()) response->add_rank_bytes_used(bytes);
  response->set_uptime_seconds(std::chrono::duration<double>(SteadyClock::now() - started_).count());
  response->set_api_key_required(!options_.api_key.empty());
  response->set_tls(!options_.tls_cert_file.empty());
  return grpc::Status::OK;
}

grpc::Status StarService::Abort(grpc::ServerContext* context, const v1::AbortRequest* request, v1::AbortResponse*) {
  if (grpc::Status s = admit_call(*context); !s.ok()) return s;
  if (request->request_id().empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "request_id: empty"};
  std::lock_guard lock(requests_mutex_);
  auto it = requests_.find(request->request_id());
  if (it == requests_.end()) {
    return {grpc::StatusCode::NOT_FOUND, "request_id: no active request '" + request->request_id() + "'"};
  }
  it->second->cancel(CancelReason::kAbort);
  return grpc::Status::OK;
}

std::string StarService::register_request(const std::string& requested_id,
                                          const std::shared_ptr<RequestChannel>& channel, grpc::Status& error) {
  std::lock_guard lock(requests_mutex_);
  std::string id = requested_id;
  if (id.empty()) {
    do {
      id = "req-" + std::to_string(++next_request_);
    } while (requests_.contains(id));
  } else if (requests_.contains(id)) {
    error = {grpc::StatusCode::ALREADY_EXISTS, "request_id: '" + id + "' is already in use by an active request"};
    return id;
  }
  requests_.emplace(id, channel);
  return id;
}

void StarService::unregister_request(const std::string& id) {
  std::lock_guard lock(requests_mutex_);
  requests_.erase(id);
}

}  // namespace star::server
