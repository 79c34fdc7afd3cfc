#include "star/engine/phase1_job.h"

#include <algorithm>
#include <string>
#include <utility>

#include "star/common/cpu_clock.h"

namespace star {
namespace {

// A rank with an empty ring segment still runs its step (it forwards its neighbours' K/V) but
// encodes no block, so it reports no progress.
bool encodes_a_block(const EncodeStep& s) { return s.kind != EncodeStep::Kind::kExtendPrefix && !s.token_ids.empty(); }

int64_t lead_tokens(const EncodeStep& s) { return s.lead_tokens; }
int64_t body_tokens(const EncodeStep& s) { return static_cast<int64_t>(s.token_ids.size()) - s.lead_tokens; }

// Keys at most one row attends: the window's, or none (0) without one.
int64_t key_cap(const AttentionWindow& w) { return w.bounded() ? w.sink + w.window : 0; }

// Chunks of a part of `tokens` tokens whose first attends `keys_before` keys.
int64_t part_chunks(int64_t tokens, int64_t keys_before, const ChunkLimit& limit, int64_t cap) {
  int64_t chunks = 0;
  for (int64_t done = 0; done < tokens; ++chunks) done += chunk_rows(limit, tokens - done, keys_before + done, cap);
  return chunks;
}

// Appends the rows of `from` after those of `to`, layer by layer ([layers, rows, Hq·d] each).
void append_window_rows(rocket::WindowQueries& to, const rocket::WindowQueries& from, int64_t n_layers) {
  const int64_t qf = from.q_floats;
  const int64_t rows = to.rows + from.rows;
  std::vector<float> q;
  q.reserve(static_cast<size_t>(n_layers * rows * qf));
  for (int64_t l = 0; l < n_layers; ++l) {
    q.insert(q.end(), to.q.begin() + l * to.rows * qf, to.q.begin() + (l + 1) * to.rows * qf);
    q.insert(q.end(), from.q.begin() + l * from.rows * qf, from.q.begin() + (l + 1) * from.rows * qf);
  }
  to.rows = rows;
  to.q_floats = qf;
  to.q = std::move(q);
}

}  // namespace

Status check_backend_runs(const EngineModel& model, const BlockPlan& plan) {
  for (const RankPlan& rank : plan.ranks) {
    for (const EncodeStep& step : rank.steps) {
      if (Status s = model.supports(step.kind); !s.ok()) {
        return Status(s.code(), "attention '" + plan.algorithm + "': " + s.message());
      }
      if (step.lead_tokens == 0) continue;
      if (Status s = model.supports(EncodeStep::Kind::kExtendPrefix); !s.ok()) {
        return Status(s.code(), "attention '" + plan.algorithm + "' with boundary_overlap: " + s.message());
      }
    }
  }
  return ok_status();
}

Result<std::unique_ptr<Phase1Job>> Phase1Job::start(EngineModel& model, const BlockPlan& plan, Communicator& comm,
                                                    KvShard& shard, double prefill_scale_factor,
                                                    const WindowRecording& window, const ChunkLimit& limit,
                                                    BlockProgress progress) {
  if (static_cast<int>(plan.ranks.size()) != comm.size()) {
    return invalid_argument("plan is for " + std::to_string(plan.ranks.size()) + " ranks but " +
                            std::to_string(comm.size()) + " are running");
  }
  if (limit.max_tokens < 0) {
    return invalid_argument("max_chunk_tokens is " + std::to_string(limit.max_tokens) +
                            "; it must be positive, or 0 for no limit");
  }
  if (limit.max_cost < 0 || (limit.max_cost > 0 && limit.keys_per_token <= 0)) {
    return invalid_argument("max_chunk_cost is " + std::to_string(limit.max_cost) + " with " +
                            std::to_string(limit.keys_per_token) +
                            " keys per token; it must be positive with a positive key count, or 0 for no limit");
  }
  if (shard.tokens() != 0) return failed_precondition("Phase 1 needs an empty shard");
  if (Status s = check_backend_runs(model, plan); !s.ok()) return s;
  Result<std::unique_ptr<KvShard>> prefix = model.new_shard(0);
  if (!prefix.ok()) return prefix.status();
  std::unique_ptr<Phase1Job> job(new Phase1Job(model, comm, shard, plan, prefill_scale_factor, window,
                                               limit, std::move(progress), std::move(*prefix)));
  if (job->done()) {
    if (Status s = job->finish_phase1(); !s.ok()) return s;
  }
  return job;
}

Phase1Job::Phase1Job(EngineModel& model, Communicator& comm, KvShard& shard, const BlockPlan& plan,
                     double prefill_scale_factor, const WindowRecording& window, const ChunkLimit& limit,
                     BlockProgress progress, std::unique_ptr<KvShard> prefix)
    : model_(model),
      comm_(comm),
      shard_(shard),
      mine_(plan.ranks[comm.rank()]),
      window_(plan.window),
      prefill_scale_factor_(prefill_scale_factor),
      recording_(window),
      limit_(limit),
      progress_(std::move(progress)),
      prefix_(std::move(prefix)),
      started_(std::chrono::steady_clock::now()) {
  for (const RankPlan& r : plan.ranks) segment_tokens_.push_back(r.shard.size());
  for (size_t i = 0; i < mine_.steps.size(); ++i) {
    if (!encodes_a_block(mine_.steps[i])) continue;
    ++blocks_total_;
    recorded_step_ = i;
  }
  records_ = recording_.out != nullptr && comm.rank() == plan.query_host && blocks_total_ > 0;
  skip_empty_parts();
}

int64_t Phase1Job::chunk_count(const BlockPlan& plan, int rank, const ChunkLimit& limit) {
  const int64_t cap = key_cap(plan.window);
  int64_t chunks = 0;
  int64_t prefix = 0;
  for (const EncodeStep& s : plan.ranks[rank].steps) {
    if (s.kind == EncodeStep::Kind::kRingSegment) {
      ++chunks;
      continue;
    }
    chunks += part_chunks(lead_tokens(s), prefix, limit, cap);
    chunks += part_chunks(body_tokens(s), prefix + lead_tokens(s), limit, cap);
    if (s.kind == EncodeStep::Kind::kExtendPrefix) prefix += body_tokens(s);
  }
  return chunks;
}

bool Phase1Job::done() const { return step_ == mine_.steps.size(); }

int64_t Phase1Job::part_tokens() const {
  const EncodeStep& s = mine_.steps[step_];
  return part_ == Part::kLead ? lead_tokens(s) : body_tokens(s);
}

int64_t Phase1Job::chunk_rows() const {
  const EncodeStep& s = mine_.steps[step_];
  const int64_t left = part_tokens() - offset_;
  if (s.kind == EncodeStep::Kind::kRingSegment) return left;
  // What chunk_count assumes from the plan: the prefix at the step's start is every earlier
  // kExtendPrefix step's tokens (a lead's are dropped after its block).
  const int64_t keys_before = step_prefix_tokens_ + (part_ == Part::kBody ? lead_tokens(s) : 0) + offset_;
  return star::chunk_rows(limit_, left, keys_before, key_cap(window_));
}

void Phase1Job::skip_empty_parts() {
  while (!done()) {
    const EncodeStep& s = mine_.steps[step_];
    if (part_ == Part::kLead) {
      step_prefix_tokens_ = prefix_->tokens();
      block_first_ = shard_.tokens();
      if (lead_tokens(s) > 0) return;
      part_ = Part::kBody;
    }
    if (body_tokens(s) > 0 || s.kind == EncodeStep::Kind::kRingSegment) return;
    ++step_;
    part_ = Part::kLead;
  }
}

int64_t Phase1Job::window_begin() const { return part_tokens() - std::min(recording_.rows, part_tokens()); }

Result<std::unique_ptr<EngineAttention>> Phase1Job::attention_for_chunk(int64_t rows) {
  const EncodeStep& s = mine_.steps[step_];
  Result<std::unique_ptr<EngineAttention>> attention = [&]() -> Result<std::unique_ptr<EngineAttention>> {
    if (part_ == Part::kLead) return model_.local_causal(*prefix_);
    switch (s.kind) {
      case EncodeStep::Kind::kExtendPrefix: return model_.local_causal(*prefix_);
      case EncodeStep::Kind::kEncodeBlock: return model_.prefixed_block(*prefix_, shard_, block_first_, window_);
      case EncodeStep::Kind::kRingSegment: return model_.ring_segment(comm_, shard_, segment_tokens_);
    }
    return internal_error("unknown encode step kind");
  }();
  if (!attention.ok()) return attention.status();
  (*attention)->set_skip_softmax(prefill_scale_factor_);
  // RocketKV records the last rows of the last block; they end at the block's end, so a chunk
  // holding some of them holds its own last rows.
  chunk_records_ = false;
  if (records_ && step_ == recorded_step_ && part_ == Part::kBody) {
    const int64_t recorded = offset_ + rows - std::max(offset_, window_begin());
    if (recorded > 0) {
      chunk_records_ = true;
      return model_.recording_queries(std::move(*attention), recorded, chunk_window_);
    }
  }
  return attention;
}

Result<Phase1Chunk> Phase1Job::next_chunk() {
  if (done()) return failed_precondition("Phase 1 job: every chunk has run");
  if (chunk_attention_ != nullptr) return failed_precondition("Phase 1 job: the last chunk is not finished");
  chunk_cpu_start_ = process_cpu_seconds();
  const int64_t rows = chunk_rows();
  Result<std::unique_ptr<EngineAttention>> attention = attention_for_chunk(rows);
  if (!attention.ok()) return attention.status();
  chunk_attention_ = std::move(*attention);
  chunk_rows_ = rows;
  const EncodeStep& s = mine_.steps[step_];
  const auto first = static_cast<size_t>(offset_ + (part_ == Part::kLead ? 0 : s.lead_tokens));
  const auto n = static_cast<size_t>(rows);
  return Phase1Chunk{std::span(s.token_ids).subspan(first, n), std::span(s.positions).subspan(first, n),
                     chunk_attention_.get()};
}

Status Phase1Job::finish_chunk() {
  if (chunk_attention_ == nullptr) return failed_precondition("Phase 1 job: no chunk is running");
  stats_.skip_softmax_tiles += chunk_attention_->skip_softmax_tiles();
  communication_seconds_ += chunk_attention_->communication_cpu_seconds();
  chunk_attention_.reset();
  stats_.tokens_processed += chunk_rows_;
  if (chunk_records_) {
    if (offset_ <= window_begin()) *recording_.out = {};  // the chunk holding the window's first row
    append_window_rows(*recording_.out, chunk_window_, model_.config().n_layers);
    recording_.out->context_rows = recording_.out->rows;
  }
  offset_ += chunk_rows_;
  ++chunks_done_;
  if (offset_ == part_tokens()) {
    if (part_ == Part::kBody) {
      if (Status s = finish_step(); !s.ok()) return s;
      ++step_;
      part_ = Part::kLead;
    } else {
      part_ = Part::kBody;
    }
    offset_ = 0;
    skip_empty_parts();
  }
  chunk_cpu_seconds_ += process_cpu_seconds() - chunk_cpu_start_;
  return done() ? finish_phase1() : ok_status();
}

Status Phase1Job::finish_step() {
  const EncodeStep& s = mine_.steps[step_];
  // The lead extended the prefix for this block only.
  if (s.lead_tokens > 0) prefix_->truncate(step_prefix_tokens_);
  if (encodes_a_block(s)) {
    ++blocks_done_;
    if (progress_) progress_(s.block_index, blocks_done_, blocks_total_);
  }
  return ok_status();
}

Status Phase1Job::finish_phase1() {
  if (finished_) return ok_status();
  finished_ = true;
  const double cpu_start = process_cpu_seconds();
  if (mine_.keep_prefix_kv) {
    if (Status s = model_.append(*prefix_, shard_); !s.ok()) return s;
  }
  if (Status s = model_.synchronize(); !s.ok()) return s;
  stats_.shard_tokens = shard_.tokens();
  stats_.shard_bytes = shard_.bytes();
  stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  stats_.compute_seconds = chunk_cpu_seconds_ + (process_cpu_seconds() - cpu_start) - communication_seconds_;
  return ok_status();
}

Status run_phase1_chunk(EngineModel& model, Phase1Job& job) {
  Result<Phase1Chunk> chunk = job.next_chunk();
  if (!chunk.ok()) return chunk.status();
  Result<std::vector<float>> logits = model.forward(chunk->tokens, chunk->positions, *chunk->attention, 0);
  if (!logits.ok()) return logits.status();
  return job.finish_chunk();
}

}  // namespace star
