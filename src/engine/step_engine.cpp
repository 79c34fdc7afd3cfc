#include "star/engine/step_engine.h"

#include <algorithm>
#include <map>
#include <span>

#include "star/engine/step_forward.h"
#include "star/engine/step_sequence.h"

namespace star {

bool own_tokens_movable(const BlockPlan& plan, const AttentionConfig& attention) {
  const std::string& sparse = attention.sparse.algorithm;
  const bool plain = !plan.window.bounded() && (sparse.empty() || sparse == "none");
  const auto host = static_cast<size_t>(plan.query_host);
  return plain && host < plan.ranks.size() && plan.ranks[host].shard.size() > 0;
}

namespace {

using Clock = StepSequence::Clock;
using Kind = SequenceEvent::Kind;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

SequenceEvent event(int64_t id, Kind kind) {
  SequenceEvent e;
  e.id = id;
  e.kind = kind;
  return e;
}

SequenceEvent failed(int64_t id, Status error) {
  SequenceEvent e = event(id, Kind::kFailed);
  e.error = std::move(error);
  return e;
}

// An error that is the request's (every rank reaches it alike), not the step's.
bool is_request_error(const Status& s) { return s.code() != StatusCode::kInternal; }

}  // namespace

class StepEngine::Impl {
 public:
  Impl(EngineModel& model, std::span<const uint8_t> sentence_ends, Communicator& comm, StepLimits limits)
      : model_(model),
        sentence_ends_(sentence_ends),
        comm_(comm),
        chunk_limit_(ChunkLimit::by_tokens_and_cost(limits.max_num_batched_tokens, limits.max_chunk_cost,
                                                    attention_keys_per_token(model.config()))) {}

  Result<std::vector<SequenceEvent>> step(const StepMessage& message) {
    std::vector<SequenceEvent> events;
    if (message.shutdown) return events;
    apply_contexts(message);
    for (int64_t id : message.finished) drop(id);
    if (Status s = apply_sampled(message); !s.ok()) return s;
    if (Status s = apply_moves(message); !s.ok()) return s;
    if (Status s = admit(message, events); !s.ok()) return s;
    if (Status s = finish_encodings(events); !s.ok()) return s;
    if (Status s = run_forward(events); !s.ok()) return s;
    return events;
  }

  bool idle() const { return sequences_.empty() && awaiting_keep_.empty(); }
  int64_t running() const { return static_cast<int64_t>(sequences_.size()); }
  bool moves_own_tokens() const { return model_.moves_shards() && comm_.size() > 1; }

  OwnTokenLoads own_token_loads() const {
    OwnTokenLoads loads;
    const StepSequence* encoding = encoding_order_.empty() ? nullptr : sequences_.at(encoding_order_.front()).get();
    loads.chunk = phase1_chunk_loads(encoding, comm_.size(), chunk_limit_);
    if (encoding != nullptr) loads.chunk_steps_left = std::max<int64_t>(0, encoding->slowest_chunks() - encoding->chunk_steps);
    const int64_t keys_per_token = attention_keys_per_token(model_.config());
    for (const auto& [id, s] : sequences_) {
      if (s->phase != StepSequence::Phase::kDecoding) continue;
      // Its next step's one row (waiting for its token, it has none pending yet).
      loads.decoding.push_back({id, s->own_host(), own_attention_load(*s, 1, keys_per_token), s->own_tokens_may_move()});
    }
    return loads;
  }

  const SequenceStats* stats(int64_t id) const {
    auto it = sequences_.find(id);
    return it == sequences_.end() ? nullptr : &it->second->stats;
  }

  const EncodedContext* context(const std::string& id) const {
    auto it = kept_.find(id);
    return it == kept_.end() ? nullptr : it->second.get();
  }

  Result<std::unique_ptr<EncodedContext>> take_context(const std::string& id) {
    auto it = kept_.find(id);
    if (it == kept_.end()) return not_found("context '" + id + "' is not kept");
    if (in_use(id)) return failed_precondition("context '" + id + "' is read by a running sequence");
    auto out = std::make_unique<EncodedContext>(std::move(*it->second));
    kept_.erase(it);
    return out;
  }

  Status borrow_context(const std::string& id, const ShardLayout& layout, const KvShard& shard) {
    if (kept_.count(id) || borrowed_.count(id)) return invalid_argument("context id '" + id + "' is already in use");
    borrowed_[id] = ContextView{layout, &shard};
    return ok_status();
  }

 private:
  bool root() const { return comm_.rank() == 0; }

  bool in_use(const std::string& context_id) const {
    return std::any_of(sequences_.begin(), sequences_.end(),
                       [&](const auto& s) { return s.second->borrowed_id == context_id; });
  }

  void apply_contexts(const StepMessage& message) {
    // A released context stays alive while sequences read it (they hold it).
    for (const std::string& id : message.release) {
      kept_.erase(id);
      borrowed_.erase(id);
    }
    for (const std::string& id : message.keep) {
      auto it = awaiting_keep_.find(id);
      if (it != awaiting_keep_.end()) kept_[id] = std::move(it->second);
    }
    awaiting_keep_.clear();
  }

  void drop(int64_t id) {
    sequences_.erase(id);
    std::erase(encoding_order_, id);
  }

  Status apply_sampled(const StepMessage& message) {
    for (const auto& [id, token] : message.sampled) {
      auto it = sequences_.find(id);
      // Finished in the same message, or failed: nothing to feed.
      if (it == sequences_.end()) continue;
      StepSequence& s = *it->second;
      if (s.phase != StepSequence::Phase::kDecoding || !s.pending.empty() || s.first_rows) {
        return internal_error("step message: sequence " + std::to_string(id) + " was sampled while not waiting for a token");
      }
      ++s.generated;
      if (s.ends_with(token, s.generated)) {
        drop(id);
        continue;
      }
      s.pending.assign(1, token);
    }
    return ok_status();
  }

  // The own tokens rank 0 moved (message.moved), before this step's forward: the rank holding them
  // sends their rows as stored and the new one keeps them in a shard of the same capacity. The
  // answers do not change: a slot's own tokens off its query host give the same bits
  // (BatchedQuerySlot::own_host).
  Status apply_moves(const StepMessage& message) {
    for (const auto& [id, to] : message.moved) {
      auto it = sequences_.find(id);
      // Ended by this message's sampled token: every rank dropped it alike.
      if (it == sequences_.end()) continue;
      StepSequence& s = *it->second;
      const std::string which = "step message: sequence " + std::to_string(id) + "'s own tokens moved to rank " +
                                std::to_string(to);
      if (!moves_own_tokens()) return internal_error(which + ", which this engine cannot do");
      if (to < 0 || to >= comm_.size()) return internal_error(which + " of " + std::to_string(comm_.size()));
      if (s.phase != StepSequence::Phase::kDecoding) return internal_error(which + " before it decodes");
      if (!s.own_tokens_may_move()) return internal_error(which + ", but they must stay on its query host");
      const int from = s.own_host();
      if (to == from) continue;
      if (Status moved = move_own_rows(s, from, to); !moved.ok()) {
        return internal_error(which + ": " + std::string(moved.message()));
      }
      s.spec.own_host = to == s.context.layout.query_host ? -1 : to;
    }
    return ok_status();
  }

  // Sends s's own rows from `from` to `to`. A size goes first, so that a holder that cannot send
  // (a negative size) fails the step on the receiver too instead of leaving it waiting.
  Status move_own_rows(StepSequence& s, int from, int to) {
    const int64_t tokens = s.own_rows();
    const int64_t bytes = tokens * model_.kv_bytes_per_token();
    if (comm_.rank() == from) {
      Result<std::vector<std::byte>> rows = internal_error("rank " + std::to_string(from) + " holds none");
      if (s.own != nullptr) rows = model_.shard_rows(*s.own);
      const bool ready = rows.ok() && static_cast<int64_t>(rows->size()) == bytes;
      const int64_t size = ready ? bytes : -1;
      if (Status st = comm_.send_recv(&size, sizeof(size), to, nullptr, 0, to); !st.ok()) return st;
      if (!rows.ok()) return rows.status();
      if (!ready) {
        return internal_error(std::to_string(rows->size()) + " bytes held, " + std::to_string(bytes) + " expected");
      }
      if (Status st = comm_.send_recv(rows->data(), rows->size(), to, nullptr, 0, to); !st.ok()) return st;
      s.own.reset();
    } else if (comm_.rank() == to) {
      int64_t size = 0;
      if (Status st = comm_.send_recv(nullptr, 0, from, &size, sizeof(size), from); !st.ok()) return st;
      if (size != bytes) return internal_error("rank " + std::to_string(from) + " could not send them");
      std::vector<std::byte> rows(static_cast<size_t>(bytes));
      if (Status st = comm_.send_recv(nullptr, 0, from, rows.data(), rows.size(), from); !st.ok()) return st;
      Result<std::unique_ptr<KvShard>> own = model_.shard_from_rows(rows, tokens, s.own_capacity());
      if (!own.ok()) return own.status();
      s.own = std::move(*own);
    }
    return ok_status();
  }

  Status admit(const StepMessage& message, std::vector<SequenceEvent>& events) {
    AdmissionContext admission{
        .model = model_,
        .sentence_ends = sentence_ends_,
        .comm = comm_,
        .chunk_limit = chunk_limit_,
        .find_context = [this](const std::string& id) -> std::optional<ContextView> {
          if (auto it = kept_.find(id); it != kept_.end()) return ContextView{it->second->layout, it->second->shard.get()};
          if (auto it = borrowed_.find(id); it != borrowed_.end()) return it->second;
          return std::nullopt;
        },
        .kept_context = [this](const std::string& id) -> std::shared_ptr<const EncodedContext> {
          auto it = kept_.find(id);
          return it == kept_.end() ? nullptr : it->second;
        }};
    for (const SequenceSpec& spec : message.admitted) {
      if (sequences_.count(spec.id)) {
        return internal_error("step message: sequence " + std::to_string(spec.id) + " admitted twice");
      }
      if (spec.keep_as.size() && (kept_.count(spec.keep_as) || borrowed_.count(spec.keep_as) || keeps(spec.keep_as))) {
        events.push_back(failed(spec.id, invalid_argument("keep_as: context id '" + spec.keep_as + "' is already in use")));
        continue;
      }
      Result<std::unique_ptr<StepSequence>> sequence = admit_sequence(admission, spec);
      if (!sequence.ok()) {
        if (!is_request_error(sequence.status())) return sequence.status();
        events.push_back(failed(spec.id, sequence.status()));
        continue;
      }
      if ((*sequence)->phase == StepSequence::Phase::kEncoding) encoding_order_.push_back(spec.id);
      sequences_[spec.id] = std::move(*sequence);
    }
    return ok_status();
  }

  bool keeps(const std::string& keep_as) const {
    return std::any_of(sequences_.begin(), sequences_.end(), [&](const auto& s) { return s.second->spec.keep_as == keep_as; });
  }

  // Sequences whose chunks ran on every rank become encoded contexts (RocketKV: after stage 1), in
  // admission order; a context-only one waits for rank 0's keep decision, the others decode.
  Status finish_encodings(std::vector<SequenceEvent>& events) {
    for (size_t i = 0; i < encoding_order_.size();) {
      const int64_t id = encoding_order_[i];
      StepSequence& s = *sequences_.at(id);
      if (s.chunk_steps < s.slowest_chunks()) {
        ++i;
        continue;
      }
      const bool rocket = s.spec.attention.sparse.algorithm == "rocket";
      Status done = rocket ? run_rocket_stage1(model_, comm_, s) : finish_encoding(model_, comm_, s);
      encoding_order_.erase(encoding_order_.begin() + static_cast<std::ptrdiff_t>(i));
      if (!done.ok()) {
        if (!is_request_error(done)) return done;
        events.push_back(failed(id, done));
        sequences_.erase(id);
        continue;
      }
      if (s.context_only()) {
        SequenceEvent e = event(id, Kind::kContextEncoded);
        e.stats = s.stats;
        e.context = s.own_context.get();
        events.push_back(std::move(e));
        awaiting_keep_[s.spec.keep_as] = std::move(s.own_context);
        sequences_.erase(id);
      }
    }
    return ok_status();
  }

  // The oldest sequence still encoding, if this rank has a chunk of it left.
  StepSequence* encoding_head() {
    if (encoding_order_.empty()) return nullptr;
    return sequences_.at(encoding_order_.front()).get();
  }

  Status run_forward(std::vector<SequenceEvent>& events) {
    StepSequence* encoding = encoding_head();
    std::optional<Phase1Chunk> chunk;
    if (encoding && !encoding->job->done()) {
      Result<Phase1Chunk> next = encoding->job->next_chunk();
      if (!next.ok()) return next.status();
      chunk = *next;
    }
    std::vector<StepSequence*> decoding;
    for (auto& [id, s] : sequences_) {
      if (s->phase == StepSequence::Phase::kDecoding && !s->pending.empty()) decoding.push_back(s.get());
    }
    Result<StepForward> forward = run_step_forward(model_, comm_, chunk ? &*chunk : nullptr, decoding, root(),
                                                   phase1_chunk_loads(encoding, comm_.size(), chunk_limit_));
    if (!forward.ok()) return forward.status();
    if (encoding) {
      if (chunk) {
        if (Status s = encoding->job->finish_chunk(); !s.ok()) return s;
      }
      ++encoding->chunk_steps;
      for (const auto& [block, done, total] : encoding->blocks_encoded) {
        SequenceEvent e = event(encoding->spec.id, Kind::kPhase1Progress);
        e.block_index = block;
        e.blocks_done = done;
        e.blocks_total = total;
        events.push_back(e);
      }
      encoding->blocks_encoded.clear();
    }
    book_decoding(*forward, decoding, events);
    return ok_status();
  }

  void book_decoding(const StepForward& forward, const std::vector<StepSequence*>& decoding,
                     std::vector<SequenceEvent>& events) {
    if (decoding.empty()) return;
    const auto now = Clock::now();
    int64_t all_rows = 0;
    for (const StepSequence* s : decoding) all_rows += static_cast<int64_t>(s->pending.size());
    const int64_t vocab = model_.config().vocab_size;
    for (size_t i = 0; i < decoding.size(); ++i) {
      StepSequence& s = *decoding[i];
      const auto rows = static_cast<int64_t>(s.pending.size());
      const double share = static_cast<double>(rows) / static_cast<double>(all_rows);
      s.stats.floats_sent += static_cast<int64_t>(static_cast<double>(forward.batched->floats_sent()) * share);
      s.stats.skip_softmax_tiles += forward.batched->slot_tiles(i);
      if (!s.first_rows) s.stats.decode_gather_merge_seconds += forward.batched->gather_merge_seconds() * share;
      s.next_position += rows;
      s.pending.clear();
      if (s.first_rows) {
        s.first_token_at = now;
        s.stats.first_token_seconds = seconds_between(s.decode_started, now);
      }
      s.stats.decode_seconds = seconds_between(s.first_token_at, now);
      const bool query_logits = s.first_rows && s.spec.generation.return_query_logits;
      s.first_rows = false;
      if (!root()) continue;

      SequenceEvent token = event(s.spec.id, Kind::kToken);
      if (forward.greedy_tokens.empty()) {
        const float* first = forward.logits.data() + forward.logit_first[i] * vocab;
        const int64_t count = forward.logit_count[i];
        if (query_logits) token.stats.query_logits.assign(first, first + count * vocab);
        token.token =
            s.sampler->sample(std::span<const float>(first + (count - 1) * vocab, static_cast<size_t>(vocab)));
      } else {
        // Greedy sampling draws nothing from the generator: the sampler has no state to keep.
        token.token = forward.greedy_tokens[i];
      }
      token.is_stop = s.is_stop(token.token);
      events.push_back(token);
      if (s.ends_with(token.token, s.generated + 1)) {
        SequenceEvent done = event(s.spec.id, Kind::kDone);
        done.finish_reason = token.is_stop ? FinishReason::kStop : FinishReason::kLength;
        done.stats = s.stats;
        done.context = s.own_context.get();
        events.push_back(std::move(done));
      }
    }
  }

  EngineModel& model_;
  std::span<const uint8_t> sentence_ends_;  // the tokenizer's, for boundary_snap; empty without one
  Communicator& comm_;
  ChunkLimit chunk_limit_;
  std::map<int64_t, std::unique_ptr<StepSequence>> sequences_;  // by id: every rank's forward order
  std::vector<int64_t> encoding_order_;                         // sequences still encoding, oldest first
  std::map<std::string, std::shared_ptr<EncodedContext>> kept_;
  std::map<std::string, ContextView> borrowed_;
  std::map<std::string, std::unique_ptr<EncodedContext>> awaiting_keep_;  // encoded last step
};

StepEngine::StepEngine(const RuntimeModel& model, Communicator& comm, StepLimits limits)
    : impl_(std::make_unique<Impl>(*model.engine, model.sentence_ends, comm, limits)) {}
StepEngine::StepEngine(EngineModel& model, Communicator& comm, StepLimits limits)
    : impl_(std::make_unique<Impl>(model, std::span<const uint8_t>{}, comm, limits)) {}
StepEngine::~StepEngine() = default;

Result<std::vector<SequenceEvent>> StepEngine::step(const StepMessage& message) { return impl_->step(message); }
bool StepEngine::idle() const { return impl_->idle(); }
bool StepEngine::moves_own_tokens() const { return impl_->moves_own_tokens(); }
OwnTokenLoads StepEngine::own_token_loads() const { return impl_->own_token_loads(); }
int64_t StepEngine::running() const { return impl_->running(); }
const SequenceStats* StepEngine::stats(int64_t id) const { return impl_->stats(id); }
const EncodedContext* StepEngine::context(const std::string& id) const { return impl_->context(id); }
Result<std::unique_ptr<EncodedContext>> StepEngine::take_context(const std::string& id) {
  return impl_->take_context(id);
}
Status StepEngine::borrow_context(const std::string& id, const ShardLayout& layout, const KvShard& shard) {
  return impl_->borrow_context(id, layout, shard);
}

}  // namespace star
