// The batched Phase 2 attention itself, fed the same q, k, v: every slot's rows come out bit for
// bit as that slot's own single-slot attention gives them (the partials and the merge are per row),
// Skip Softmax counts per slot, a row split runs its parts as separate calls would, and a RocketKV
// compacted context keeping every row with every page selected answers as the plain shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "star/attention/layer_attentions.h"
#include "star/attention/rocket/compacted_kv_cache.h"
#include "star/attention/rocket/rocket_context_partial.h"
#include "star/backend/cpu/attention_kernel_clock.h"
#include "star/dist/self_communicator.h"
#include "star/engine/row_split.h"

namespace star {
namespace {

constexpr int64_t kLayers = 2;
const AttentionShape kShape{4, 2, 16};  // Hq, Hkv, d

std::vector<float> normal(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

KvCache random_context(int64_t tokens, std::mt19937& rng) {
  KvCache cache(kLayers, kShape.n_kv_heads, kShape.head_dim);
  cache.grow(tokens);
  for (int64_t l = 0; l < kLayers; ++l) {
    const auto k = normal(tokens * kShape.kv_floats(), rng), v = normal(tokens * kShape.kv_floats(), rng);
    cache.store(l, 0, k.data(), v.data(), tokens);
  }
  return cache;
}

struct Inputs {
  std::vector<float> q, k, v;  // per layer, [rows, ...]
};

Inputs random_inputs(int64_t rows, std::mt19937& rng) {
  Inputs in;
  in.q = normal(kLayers * rows * kShape.q_floats(), rng);
  in.k = normal(kLayers * rows * kShape.kv_floats(), rng);
  in.v = normal(kLayers * rows * kShape.kv_floats(), rng);
  return in;
}

// Runs one forward's attention over rows [first, first + rows) of `in`: out per layer.
std::vector<float> run(LayerAttention& attention, const Inputs& in, int64_t total, int64_t first, int64_t rows) {
  std::vector<float> out(kLayers * rows * kShape.q_floats());
  EXPECT_TRUE(attention.begin(rows).ok());
  for (int64_t l = 0; l < kLayers; ++l) {
    const Status s = attention.attend(l, in.q.data() + (l * total + first) * kShape.q_floats(),
                                      in.k.data() + (l * total + first) * kShape.kv_floats(),
                                      in.v.data() + (l * total + first) * kShape.kv_floats(), rows,
                                      out.data() + l * rows * kShape.q_floats());
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return out;
}

bool same_rows(const std::vector<float>& all, int64_t total, int64_t first, const std::vector<float>& part,
               int64_t rows) {
  const int64_t qf = kShape.q_floats();
  for (int64_t l = 0; l < kLayers; ++l) {
    if (std::memcmp(all.data() + (l * total + first) * qf, part.data() + l * rows * qf, rows * qf * sizeof(float)) !=
        0) {
      return false;
    }
  }
  return true;
}

struct SlotSpec {
  int64_t context_tokens;
  int64_t query_rows;
  AttentionWindow window;
  double skip_softmax;
};

TEST(BatchedAttention, EverySlotsRowsAreItsAloneRowsBitForBit) {
  const std::vector<SlotSpec> specs{{90, 5, {}, 0.0}, {17, 1, {}, 0.7}, {140, 3, {2, 11}, 0.0}, {64, 6, {}, 0.3}};
  std::mt19937 rng(5);
  std::vector<KvCache> contexts, own_together(specs.size()), own_alone(specs.size());
  for (const SlotSpec& spec : specs) contexts.push_back(random_context(spec.context_tokens, rng));
  for (size_t i = 0; i < specs.size(); ++i) {
    own_together[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
    own_alone[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
  }
  SelfCommunicator self;
  std::vector<SkipSoftmaxTiles> tiles_together(specs.size()), tiles_alone(specs.size());
  for (int step = 0; step < 4; ++step) {
    std::vector<BatchedShardedQueryAttention::Slot> slots(specs.size());
    int64_t total = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      slots[i] = {&contexts[i], nullptr, &own_together[i], specs[i].window, specs[i].skip_softmax,
                  step == 0 ? specs[i].query_rows : 1};
      total += slots[i].rows;
    }
    const Inputs in = random_inputs(total, rng);
    BatchedShardedQueryAttention together(kShape, self, slots);
    const auto out = run(together, in, total, 0, total);
    int64_t first = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      auto alone_slot = slots[i];
      alone_slot.own = &own_alone[i];
      BatchedShardedQueryAttention alone(kShape, self, {alone_slot});
      const auto own = run(alone, in, total, first, slots[i].rows);
      EXPECT_TRUE(same_rows(out, total, first, own, slots[i].rows)) << "slot " << i << " step " << step;
      tiles_together[i] += together.slot_tiles(i);
      tiles_alone[i] += alone.slot_tiles(0);
      first += slots[i].rows;
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(tiles_together[i], tiles_alone[i]) << "slot " << i;
    EXPECT_EQ(tiles_together[i].visited > 0, specs[i].skip_softmax > 0) << "slot " << i;
    EXPECT_EQ(own_together[i].tokens(), specs[i].query_rows + 3);
    EXPECT_EQ(contexts[i].tokens(), specs[i].context_tokens);
  }
}

// Many sequences on one context shard (a session's queries): runs of consecutive slots with the
// same rows read the shard once (attend_shared), and each slot still gets its alone rows bit for
// bit, whether it holds its own tokens (query host) or not, and with slots that must run alone (a
// bounded window, Skip Softmax, another context) breaking the runs.
TEST(BatchedAttention, SlotsOnOneContextAreTheirAloneRowsBitForBit) {
  std::mt19937 rng(13);
  KvCache shared = random_context(300, rng), other = random_context(80, rng);
  struct Spec {
    KvCache* context;
    bool own;
    AttentionWindow window;
    double skip_softmax;
  };
  const std::vector<Spec> specs{{&shared, true, {}, 0.0},     {&shared, true, {}, 0.0},  {&shared, false, {}, 0.0},
                                {&shared, true, {}, 0.0},     {&shared, true, {2, 20}, 0.0},
                                {&shared, true, {}, 0.0},     {&shared, true, {}, 0.5},  {&other, true, {}, 0.0},
                                {&shared, true, {}, 0.0},     {&shared, false, {}, 0.0}};
  std::vector<KvCache> own_together(specs.size()), own_alone(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    own_together[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
    own_alone[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
  }
  SelfCommunicator self;
  for (int step = 0; step < 3; ++step) {
    std::vector<BatchedShardedQueryAttention::Slot> slots(specs.size());
    int64_t total = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      slots[i] = {specs[i].context, nullptr, specs[i].own ? &own_together[i] : nullptr, specs[i].window,
                  specs[i].skip_softmax, step == 0 ? 4 : 1};
      total += slots[i].rows;
    }
    const Inputs in = random_inputs(total, rng);
    BatchedShardedQueryAttention together(kShape, self, slots);
    cpu::set_attention_kernel_clock(true);
    const auto out = run(together, in, total, 0, total);
    const int64_t calls = cpu::read_attention_kernel_clock().decode.calls;
    cpu::set_attention_kernel_clock(false);
    if (step > 0) {
      // Per layer: runs {0-3}, {5}, {8-9} on the shared shard share a call; 4, 6 and 7 run alone; the
      // 8 slots with own tokens attend to them one call each.
      EXPECT_EQ(calls, kLayers * (3 + 3 + 8)) << "step " << step;
    }
    int64_t first = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      auto alone_slot = slots[i];
      alone_slot.own = specs[i].own ? &own_alone[i] : nullptr;
      BatchedShardedQueryAttention alone(kShape, self, {alone_slot});
      const auto own = run(alone, in, total, first, slots[i].rows);
      EXPECT_TRUE(same_rows(out, total, first, own, slots[i].rows)) << "slot " << i << " step " << step;
      first += slots[i].rows;
    }
  }
}

TEST(BatchedAttention, ARowSplitRunsItsPartsAsSeparateCalls) {
  std::mt19937 rng(9);
  KvCache context = random_context(50, rng);
  KvCache own_split(kLayers, kShape.n_kv_heads, kShape.head_dim), own_apart = own_split;
  KvCache chunk_split(kLayers, kShape.n_kv_heads, kShape.head_dim), chunk_apart = chunk_split;
  SelfCommunicator self;
  const Inputs in = random_inputs(7 + 4, rng);

  LocalCausalAttention chunk(kShape, chunk_split);
  BatchedShardedQueryAttention batched(kShape, self, {{&context, nullptr, &own_split, {}, 0.0, 4}});
  RowSplitLayer<LayerAttention> split(kShape, {{&chunk, 7}, {&batched, 4}});
  const auto out = run(split, in, 11, 0, 11);

  LocalCausalAttention chunk_alone(kShape, chunk_apart);
  BatchedShardedQueryAttention batched_alone(kShape, self, {{&context, nullptr, &own_apart, {}, 0.0, 4}});
  EXPECT_TRUE(same_rows(out, 11, 0, run(chunk_alone, in, 11, 0, 7), 7));
  EXPECT_TRUE(same_rows(out, 11, 7, run(batched_alone, in, 11, 7, 4), 4));
  EXPECT_EQ(chunk_split.tokens(), 7);
  EXPECT_EQ(own_split.tokens(), 4);

  const Status refused = split.begin(12);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("row_split"), std::string::npos) << refused.message();
}

TEST(BatchedAttention, ACompactedContextKeepingEveryRowAnswersAsThePlainShard) {
  std::mt19937 rng(13);
  constexpr int64_t kTokens = 48;
  KvCache context = random_context(kTokens, rng);
  RocketConfig config;
  config.page_size = 4;
  config.topk = kTokens;  // every page
  config.window_size = 8;
  rocket::CompactedKvCache compacted(kLayers, kShape.n_kv_heads, kShape.head_dim, KvDType::kF32, config.page_size);
  std::vector<int64_t> all(kTokens);
  for (int64_t t = 0; t < kTokens; ++t) all[t] = t;
  for (int64_t l = 0; l < kLayers; ++l) compacted.keep_rows(l, context, {all, all});
  rocket::RocketContextPartial rocket_context(kShape, compacted, config);

  SelfCommunicator self;
  KvCache own_plain(kLayers, kShape.n_kv_heads, kShape.head_dim), own_rocket = own_plain;
  for (int step = 0; step < 3; ++step) {
    const int64_t rows = step == 0 ? 5 : 1;
    const Inputs in = random_inputs(rows, rng);
    BatchedShardedQueryAttention plain(kShape, self, {{&context, nullptr, &own_plain, {}, 0.0, rows}});
    BatchedShardedQueryAttention rocket(kShape, self, {{nullptr, &rocket_context, &own_rocket, {}, 0.0, rows}});
    const auto a = run(plain, in, rows, 0, rows), b = run(rocket, in, rows, 0, rows);
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-5f) << "step " << step;  // per KV head against all heads at once: rounding only
  }
}

// With few pages, a one-row slot attends to fewer rows: its output moves off the dense one, and
// alongside another slot it still answers as alone.
TEST(BatchedAttention, ACompactedContextSelectsPagesPerSlotInABatch) {
  std::mt19937 rng(17);
  constexpr int64_t kTokens = 64;
  KvCache context = random_context(kTokens, rng), other = random_context(30, rng);
  RocketConfig config;
  config.page_size = 4;
  config.topk = 2;
  config.window_size = 4;
  rocket::CompactedKvCache compacted(kLayers, kShape.n_kv_heads, kShape.head_dim, KvDType::kF32, config.page_size);
  std::vector<int64_t> all(kTokens);
  for (int64_t t = 0; t < kTokens; ++t) all[t] = t;
  for (int64_t l = 0; l < kLayers; ++l) compacted.keep_rows(l, context, {all, all});
  rocket::RocketContextPartial rocket_context(kShape, compacted, config);

  SelfCommunicator self;
  KvCache own_together(kLayers, kShape.n_kv_heads, kShape.head_dim), own_alone = own_together;
  KvCache own_dense = own_together, own_other = own_together;
  const Inputs in = random_inputs(2, rng);
  BatchedShardedQueryAttention together(
      kShape, self,
      {{nullptr, &rocket_context, &own_together, {}, 0.0, 1}, {&other, nullptr, &own_other, {}, 0.0, 1}});
  BatchedShardedQueryAttention alone(kShape, self, {{nullptr, &rocket_context, &own_alone, {}, 0.0, 1}});
  BatchedShardedQueryAttention dense(kShape, self, {{&context, nullptr, &own_dense, {}, 0.0, 1}});
  const auto out = run(together, in, 2, 0, 2);
  const auto selected = run(alone, in, 2, 0, 1);
  EXPECT_TRUE(same_rows(out, 2, 0, selected, 1));
  const auto full = run(dense, in, 2, 0, 1);
  float moved = 0;
  for (size_t i = 0; i < full.size(); ++i) moved = std::max(moved, std::abs(full[i] - selected[i]));
  EXPECT_GT(moved, 1e-3f);
}

}  // namespace
}  // namespace star
