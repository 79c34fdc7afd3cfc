#include "star/engine/phase1_executor.h"

#include <chrono>
#include <cstring>
#include <string>

#include "star/attention/layer_attentions.h"
#include "star/common/cpu_clock.h"

namespace star {
namespace {

std::vector<int64_t> segment_sizes(const BlockPlan& plan) {
  std::vector<int64_t> sizes;
  for (const RankPlan& r : plan.ranks) sizes.push_back(r.shard.size());
  return sizes;
}

void append_cache(const KvCache& from, KvCache& to) {
  const int64_t first = to.grow(from.tokens());
  const size_t bytes = static_cast<size_t>(from.tokens() * from.row_floats()) * sizeof(float);
  for (int64_t l = 0; l < from.n_layers(); ++l) {
    std::memcpy(to.keys(l) + first * to.row_floats(), from.keys(l), bytes);
    std::memcpy(to.values(l) + first * to.row_floats(), from.values(l), bytes);
  }
}

}  // namespace

Result<Phase1Stats> encode_context(const LlamaModel& model, const BlockPlan& plan, Communicator& comm,
                                   KvCache& shard, const BlockProgress& progress) {
  if (static_cast<int>(plan.ranks.size()) != comm.size()) {
    return invalid_argument("plan is for " + std::to_string(plan.ranks.size()) + " ranks but " +
                            std::to_string(comm.size()) + " are running");
  }
  if (shard.tokens() != 0) return failed_precondition("encode_context needs an empty shard");
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  double communication = 0;
  const LlamaConfig& c = model.config();
  const AttentionShape shape = AttentionShape::of(c);
  const RankPlan& mine = plan.ranks[comm.rank()];

  int total_blocks = 0;
  for (const EncodeStep& s : mine.steps) total_blocks += s.kind != EncodeStep::Kind::kExtendPrefix;
  KvCache prefix(c.n_layers, c.n_kv_heads, c.head_dim);
  Phase1Stats stats;
  int done = 0;
  for (const EncodeStep& step : mine.steps) {
    Result<std::vector<float>> r = [&]() -> Result<std::vector<float>> {
      switch (step.kind) {
        case EncodeStep::Kind::kExtendPrefix: {
          LocalCausalAttention attention(shape, prefix);
          return model.forward(step.token_ids, step.positions, attention, 0);
        }
        case EncodeStep::Kind::kEncodeBlock: {
          PrefixedBlockAttention attention(shape, prefix, shard, plan.window);
          return model.forward(step.token_ids, step.positions, attention, 0);
        }
        case EncodeStep::Kind::kRingSegment: {
          RingSegmentAttention attention(shape, comm, shard, segment_sizes(plan));
          auto logits = model.forward(step.token_ids, step.positions, attention, 0);
          communication += attention.communication_cpu_seconds();
          return logits;
        }
      }
      return internal_error("unknown encode step kind");
    }();
    if (!r.ok()) return r.status();
    stats.tokens_processed += static_cast<int64_t>(step.token_ids.size());
    if (step.kind != EncodeStep::Kind::kExtendPrefix) {
      ++done;
      if (progress) progress(step.block_index, done, total_blocks);
    }
  }
  if (mine.keep_prefix_kv) append_cache(prefix, shard);
  stats.shard_tokens = shard.tokens();
  stats.shard_bytes = shard.bytes();
  stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.compute_seconds = process_cpu_seconds() - cpu_start - communication;
  return stats;
}

}  // namespace star
