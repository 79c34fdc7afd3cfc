#include "star/engine/phase1_executor.h"

#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "star/common/cpu_clock.h"

namespace star {
namespace {

std::vector<int64_t> segment_sizes(const BlockPlan& plan) {
  std::vector<int64_t> sizes;
  for (const RankPlan& r : plan.ranks) sizes.push_back(r.shard.size());
  return sizes;
}

// Every rank checks every rank's steps, so all reach the same verdict before any collective.
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

}  // namespace

Result<Phase1Stats> encode_context(EngineModel& model, const BlockPlan& plan, Communicator& comm, KvShard& shard,
                                   const BlockProgress& progress, double prefill_scale_factor,
                                   const WindowRecording& window) {
  if (static_cast<int>(plan.ranks.size()) != comm.size()) {
    return invalid_argument("plan is for " + std::to_string(plan.ranks.size()) + " ranks but " +
                            std::to_string(comm.size()) + " are running");
  }
  if (shard.tokens() != 0) return failed_precondition("encode_context needs an empty shard");
  if (Status s = check_backend_runs(model, plan); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  double communication = 0;
  const RankPlan& mine = plan.ranks[comm.rank()];

  // A rank with an empty ring segment still runs its step (it forwards its neighbours' K/V) but
  // encodes no block, so it reports no progress.
  const auto encodes_a_block = [](const EncodeStep& s) {
    return s.kind != EncodeStep::Kind::kExtendPrefix && !s.token_ids.empty();
  };
  int total_blocks = 0;
  const EncodeStep* last_block = nullptr;
  for (const EncodeStep& s : mine.steps) {
    total_blocks += encodes_a_block(s);
    if (encodes_a_block(s)) last_block = &s;
  }
  const EncodeStep* recorded = window.out != nullptr && comm.rank() == plan.query_host ? last_block : nullptr;
  Result<std::unique_ptr<KvShard>> prefix = model.new_shard(0);
  if (!prefix.ok()) return prefix.status();
  Phase1Stats stats;
  int done = 0;
  for (const EncodeStep& step : mine.steps) {
    // Lead tokens extend the prefix for this step only: encoded causally after it, then dropped, so
    // the block attends to [prefix ‖ lead ‖ itself] and keeps its own KV alone. The lead's KV depends
    // on the prefix and the lead only (causal), so two passes equal one over the whole step.
    const auto lead = static_cast<size_t>(step.lead_tokens);
    const int64_t prefix_tokens = (*prefix)->tokens();
    if (lead > 0) {
      Result<std::unique_ptr<EngineAttention>> extend = model.local_causal(**prefix);
      if (!extend.ok()) return extend.status();
      (*extend)->set_skip_softmax(prefill_scale_factor);
      Result<std::vector<float>> r = model.forward(std::span(step.token_ids).first(lead),
                                                   std::span(step.positions).first(lead), **extend, 0);
      if (!r.ok()) return r.status();
      stats.skip_softmax_tiles += (*extend)->skip_softmax_tiles();
    }
    Result<std::unique_ptr<EngineAttention>> attention = [&]() -> Result<std::unique_ptr<EngineAttention>> {
      switch (step.kind) {
        case EncodeStep::Kind::kExtendPrefix: return model.local_causal(**prefix);
        case EncodeStep::Kind::kEncodeBlock: return model.prefixed_block(**prefix, shard, plan.window);
        case EncodeStep::Kind::kRingSegment: return model.ring_segment(comm, shard, segment_sizes(plan));
      }
      return internal_error("unknown encode step kind");
    }();
    if (!attention.ok()) return attention.status();
    (*attention)->set_skip_softmax(prefill_scale_factor);
    if (&step == recorded) {
      attention = model.recording_queries(std::move(*attention), window.rows, *window.out);
      if (!attention.ok()) return attention.status();
    }
    Result<std::vector<float>> r = model.forward(std::span(step.token_ids).subspan(lead),
                                                 std::span(step.positions).subspan(lead), **attention, 0);
    if (!r.ok()) return r.status();
    stats.skip_softmax_tiles += (*attention)->skip_softmax_tiles();
    if (&step == recorded) window.out->context_rows = window.out->rows;
    if (lead > 0) (*prefix)->truncate(prefix_tokens);
    communication += (*attention)->communication_cpu_seconds();
    stats.tokens_processed += static_cast<int64_t>(step.token_ids.size());
    if (encodes_a_block(step)) {
      ++done;
      if (progress) progress(step.block_index, done, total_blocks);
    }
  }
  if (mine.keep_prefix_kv) {
    if (Status s = model.append(**prefix, shard); !s.ok()) return s;
  }
  if (Status s = model.synchronize(); !s.ok()) return s;
  stats.shard_tokens = shard.tokens();
  stats.shard_bytes = shard.bytes();
  stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.compute_seconds = process_cpu_seconds() - cpu_start - communication;
  return stats;
}

}  // namespace star
