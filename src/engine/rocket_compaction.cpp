#include "star/engine/rocket_compaction.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "star/attention/rocket/stage1.h"
#include "star/attention/sparse_attention_config_io.h"

namespace star {
namespace {

using Keep = std::vector<std::vector<std::vector<int64_t>>>;  // [layer][kv] ascending rows

// Where each rank's scored keys sit in the context's scored sequence [0, L − C): ranks ordered by
// shard start (a rank's shard is one contiguous range; the query host's ends with the window's C
// context tokens).
struct ScoredLayout {
  std::vector<int64_t> count, offset;  // per rank
  int64_t longest = 0;
};

ScoredLayout scored_layout(const BlockPlan& plan, int64_t window_context_rows) {
  const auto P = static_cast<int>(plan.ranks.size());
  ScoredLayout out{std::vector<int64_t>(P), std::vector<int64_t>(P)};
  std::vector<int> order(P);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.ranks[a].shard.begin < plan.ranks[b].shard.begin; });
  int64_t next = 0;
  for (int r : order) {
    out.count[r] = plan.ranks[r].shard.size() - (r == plan.query_host ? window_context_rows : 0);
    out.offset[r] = next;
    next += out.count[r];
    out.longest = std::max(out.longest, out.count[r]);
  }
  return out;
}

Keep keep_everything(int64_t layers, int64_t kv_heads, int64_t tokens) {
  std::vector<int64_t> all(tokens);
  std::iota(all.begin(), all.end(), 0);
  return Keep(layers, std::vector<std::vector<int64_t>>(kv_heads, all));
}

}  // namespace

Status check_rocket_plan(const BlockPlan& plan, const RocketConfig& config) {
  // The engine's own guard for callers that build a RocketConfig directly (the configuration
  // readers run the same validation).
  const SparseAttentionConfig sparse{.algorithm = "rocket", .skip_softmax = {}, .rocket = config};
  if (Status s = validate_sparse_attention_config(sparse); !s.ok()) return s;
  if (plan.window.bounded()) {
    return invalid_argument("sparse_attention 'rocket': not with attention '" + plan.algorithm +
                            "' (its sliding window already bounds the keys)");
  }
  for (const RankPlan& r : plan.ranks) {
    if (r.keep_prefix_kv) return invalid_argument("sparse_attention 'rocket': not with keep_prefix_kv");
  }
  if (plan.context_tokens > config.prompt_budget &&
      plan.ranks[plan.query_host].shard.end != plan.context_tokens) {
    return internal_error("rocket: the query host's shard does not end the context");
  }
  return ok_status();
}

Result<std::unique_ptr<KvShard>> compact_for_rocket(EngineModel& model, Communicator& comm, const BlockPlan& plan,
                                                    const RocketConfig& config, const rocket::WindowQueries& window,
                                                    const KvShard& shard) {
  const LlamaConfig& c = model.config();
  const rocket::HeadShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  const int me = comm.rank();
  const int64_t L = plan.context_tokens, layers = c.n_layers, kv_heads = c.n_kv_heads;
  if (shard.tokens() != plan.ranks[me].shard.size()) {
    return failed_precondition("rocket: shard of " + std::to_string(shard.tokens()) + " tokens, plan says " +
                               std::to_string(plan.ranks[me].shard.size()));
  }
  if (L <= config.prompt_budget) {
    return model.compacted_shard(shard, keep_everything(layers, kv_heads, shard.tokens()), config);
  }

  // W window rows; the first C of them are the query host's last context tokens.
  int64_t rows[2] = {window.rows, window.context_rows};
  if (Status s = comm.broadcast(rows, sizeof rows, plan.query_host); !s.ok()) return s;
  const int64_t W = rows[0], C = rows[1];
  if (W < 1 || C > W || C > plan.ranks[plan.query_host].shard.size()) {
    return internal_error("rocket: the query host recorded no usable window queries");
  }
  const int64_t qw_floats = W * c.n_heads * c.head_dim;
  std::vector<float> qw(layers * qw_floats);
  if (me == plan.query_host) std::copy(window.q.begin(), window.q.end(), qw.begin());
  if (Status s = comm.broadcast(qw, plan.query_host); !s.ok()) return s;

  const ScoredLayout layout = scored_layout(plan, C);
  if (std::accumulate(layout.count.begin(), layout.count.end(), int64_t{0}) != L - C) {
    return internal_error("rocket: the plan's shards do not tile the context");
  }
  const int P = comm.size();
  const int64_t mine = layout.count[me], lse_size = c.n_heads * W, longest = layout.longest;
  std::vector<double> lse_all(P * lse_size), scores_sent(kv_heads * longest), scores_all(P * kv_heads * longest);
  std::vector<double> sequence(L - C);
  Keep keep(layers, std::vector<std::vector<int64_t>>(kv_heads));
  for (int64_t l = 0; l < layers; ++l) {
    Result<std::vector<float>> keys = model.shard_keys(shard, l);
    if (!keys.ok()) return keys.status();
    const float* q = qw.data() + l * qw_floats;
    const std::vector<double> lse_mine = rocket::window_logsumexp(q, W, keys->data(), mine, shape);
    if (Status s = comm.all_gather(lse_mine.data(), lse_size * sizeof(double), lse_all.data()); !s.ok()) return s;
    const std::vector<double> lse = rocket::merge_logsumexp(lse_all, P, lse_size);
    const std::vector<double> scores = rocket::window_scores(q, W, keys->data(), mine, shape, lse);
    for (int64_t kv = 0; kv < kv_heads; ++kv) {
      std::copy_n(scores.begin() + kv * mine, mine, scores_sent.begin() + kv * longest);
    }
    if (Status s = comm.all_gather(scores_sent.data(), scores_sent.size() * sizeof(double), scores_all.data());
        !s.ok()) {
      return s;
    }
    for (int64_t kv = 0; kv < kv_heads; ++kv) {
      for (int r = 0; r < P; ++r) {
        std::copy_n(scores_all.begin() + (r * kv_heads + kv) * longest, layout.count[r],
                    sequence.begin() + layout.offset[r]);
      }
      const std::vector<double> pooled = rocket::max_pool_same(sequence, config.kernel_size);
      for (int64_t t : rocket::top_ascending(pooled, config.prompt_budget - W)) {
        if (t >= layout.offset[me] && t < layout.offset[me] + mine) keep[l][kv].push_back(t - layout.offset[me]);
      }
      for (int64_t t = mine; t < shard.tokens(); ++t) keep[l][kv].push_back(t);  // the window's context rows
    }
  }
  return model.compacted_shard(shard, keep, config);
}

Result<std::unique_ptr<KvShard>> rocket_stage1(EngineModel& model, Communicator& comm, const BlockPlan& plan,
                                               const RocketConfig& config, const rocket::WindowQueries& context_window,
                                               std::span<const int32_t> query_ids, KvShard& shard) {
  if (query_ids.empty() || plan.context_tokens <= config.prompt_budget) {
    return compact_for_rocket(model, comm, plan, config, context_window, shard);
  }
  Result<std::unique_ptr<EngineAttention>> pass =
      model.sharded_query(comm, shard, comm.rank() == plan.query_host, plan.window);
  if (!pass.ok()) return pass.status();
  rocket::WindowQueries query_window;
  pass = model.recording_queries(std::move(*pass), config.window_size, query_window);
  if (!pass.ok()) return pass.status();
  std::vector<int32_t> positions(query_ids.size());
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(plan.query_position_start));
  const int64_t tokens = shard.tokens();
  Result<std::vector<float>> r = model.forward(query_ids, positions, **pass, 0);
  shard.truncate(tokens);
  if (!r.ok()) return r.status();
  const rocket::WindowQueries window =
      rocket::prompt_window(context_window, query_window, config.window_size, model.config().n_layers);
  return compact_for_rocket(model, comm, plan, config, window, shard);
}

}  // namespace star
