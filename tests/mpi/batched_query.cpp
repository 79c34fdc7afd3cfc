// Batched Phase 2 across 1–4 ranks, at the attention: each sequence's context split unevenly over
// the ranks, each with its own query host. Per layer one all-gather carries every slot's rows
// (N·Hq·(d+1) floats); every slot answers as one rank holding its whole context (within merge
// rounding) and, in the batch, bit for bit as that slot's own distributed forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "star/attention/layer_attentions.h"
#include "star/dist/self_communicator.h"
#include "support/mpi_world.h"

namespace star {
namespace {

constexpr int64_t kLayers = 2;
const AttentionShape kShape{8, 2, 16};  // Hq, Hkv, d

std::vector<float> normal(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// A context's K and V per layer, the same on every rank.
struct Context {
  int64_t tokens = 0;
  std::vector<std::vector<float>> k, v;  // [layer][tokens * Hkv * d]

  KvCache rows(int64_t first, int64_t end) const {
    KvCache cache(kLayers, kShape.n_kv_heads, kShape.head_dim);
    cache.grow(end - first);
    for (int64_t l = 0; l < kLayers; ++l) {
      cache.store(l, 0, k[l].data() + first * kShape.kv_floats(), v[l].data() + first * kShape.kv_floats(),
                  end - first);
    }
    return cache;
  }
};

Context random_context(int64_t tokens, std::mt19937& rng) {
  Context c;
  c.tokens = tokens;
  for (int64_t l = 0; l < kLayers; ++l) {
    c.k.push_back(normal(tokens * kShape.kv_floats(), rng));
    c.v.push_back(normal(tokens * kShape.kv_floats(), rng));
  }
  return c;
}

// Rank r's share of a context of `tokens`: uneven, rotated by `salt`, some ranks maybe empty.
std::pair<int64_t, int64_t> share(int64_t tokens, int rank, int ranks, int salt) {
  std::vector<int64_t> cuts{0};
  for (int r = 1; r < ranks; ++r) cuts.push_back(std::min(tokens, (tokens * r + salt * 7 * r) / ranks));
  cuts.push_back(tokens);
  for (size_t i = 1; i < cuts.size(); ++i) cuts[i] = std::max(cuts[i], cuts[i - 1]);
  const int which = (rank + salt) % ranks;
  return {cuts[which], cuts[which + 1]};
}

struct Inputs {
  std::vector<float> q, k, v;  // per layer, [rows, ...]
};

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

// Rows [first, first + rows) of every layer of a forward of `total` rows.
std::vector<float> rows_of(const std::vector<float>& all, int64_t total, int64_t first, int64_t rows) {
  std::vector<float> part;
  const int64_t qf = kShape.q_floats();
  for (int64_t l = 0; l < kLayers; ++l) {
    part.insert(part.end(), all.begin() + (l * total + first) * qf, all.begin() + (l * total + first + rows) * qf);
  }
  return part;
}

struct SlotSpec {
  int64_t context_tokens;
  int64_t query_rows;
  double skip_softmax;
};

TEST(BatchedQueryRanks, OneGatherCarriesEverySlotAndEachAnswersAsItsWholeContext) {
  auto world = testing::world();
  Communicator& comm = *world;
  const int P = comm.size(), me = comm.rank();
  const std::vector<SlotSpec> specs{{70, 4, 0.0}, {9, 1, 0.0}, {123, 3, 0.5}, {40, 6, 0.0}, {55, 2, 0.0}};
  std::mt19937 rng(21);  // the same draws on every rank
  std::vector<Context> contexts;
  for (const SlotSpec& spec : specs) contexts.push_back(random_context(spec.context_tokens, rng));

  const size_t K = specs.size();
  std::vector<KvCache> shards, whole;
  std::vector<KvCache> own_batched(K), own_alone(K), own_reference(K);
  for (size_t i = 0; i < K; ++i) {
    const auto [first, end] = share(contexts[i].tokens, me, P, static_cast<int>(i));
    shards.push_back(contexts[i].rows(first, end));
    whole.push_back(contexts[i].rows(0, contexts[i].tokens));
    for (auto* own : {&own_batched[i], &own_alone[i], &own_reference[i]}) {
      *own = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
    }
  }
  auto is_host = [&](size_t i) { return static_cast<int>(i) % P == me; };

  SelfCommunicator self;
  for (int step = 0; step < 3; ++step) {
    std::vector<BatchedShardedQueryAttention::Slot> slots(K);
    int64_t total = 0;
    for (size_t i = 0; i < K; ++i) {
      slots[i] = {&shards[i], nullptr, is_host(i) ? &own_batched[i] : nullptr, {}, specs[i].skip_softmax,
                  step == 0 ? specs[i].query_rows : 1};
      total += slots[i].rows;
    }
    Inputs in{normal(kLayers * total * kShape.q_floats(), rng), normal(kLayers * total * kShape.kv_floats(), rng),
              normal(kLayers * total * kShape.kv_floats(), rng)};
    BatchedShardedQueryAttention batched(kShape, comm, slots);
    const auto out = run(batched, in, total, 0, total);
    EXPECT_EQ(batched.floats_sent(), P == 1 ? 0 : kLayers * total * kShape.n_heads * (kShape.head_dim + 1));

    int64_t first = 0;
    for (size_t i = 0; i < K; ++i) {
      const int64_t rows = slots[i].rows;
      const auto mine = rows_of(out, total, first, rows);

      auto alone_slot = slots[i];
      alone_slot.own = is_host(i) ? &own_alone[i] : nullptr;
      BatchedShardedQueryAttention alone(kShape, comm, {alone_slot});
      EXPECT_EQ(mine, run(alone, in, total, first, rows)) << "slot " << i << " step " << step;

      // One rank with the whole context (Skip Softmax decides per rank's keys, so dense only).
      if (specs[i].skip_softmax == 0) {
        BatchedShardedQueryAttention reference(kShape, self,
                                               {{&whole[i], nullptr, &own_reference[i], {}, 0.0, rows}});
        const auto expected = run(reference, in, total, first, rows);
        float worst = 0;
        for (size_t j = 0; j < expected.size(); ++j) worst = std::max(worst, std::abs(expected[j] - mine[j]));
        EXPECT_LT(worst, 2e-6f) << "slot " << i << " step " << step;
      }
      first += rows;
    }
  }
  for (size_t i = 0; i < K; ++i) {
    EXPECT_EQ(own_batched[i].tokens(), is_host(i) ? specs[i].query_rows + 2 : 0) << "slot " << i;
  }
}

// Own tokens kept off the query host: their rank attends them into extra rows of the gather and
// every rank merges them with the query host's context partial after it, so each row is the one
// the query host would have made, bit for bit, while the own tokens' reads move to another rank.
TEST(BatchedQueryRanks, OwnTokensOnAnotherRankGiveTheSameRows) {
  auto world = testing::world();
  Communicator& comm = *world;
  const int P = comm.size(), me = comm.rank();
  if (P == 1) GTEST_SKIP() << "needs a second rank";
  const std::vector<int64_t> context_tokens{70, 33, 123, 40, 55, 64};
  std::mt19937 rng(34);
  std::vector<Context> contexts;
  for (int64_t tokens : context_tokens) contexts.push_back(random_context(tokens, rng));
  const size_t K = contexts.size();
  std::vector<KvCache> shards;
  std::vector<KvCache> own_host_side(K), own_moved(K);
  // Every rank holds a part of each context, the query host (i % P) included.
  for (size_t i = 0; i < K; ++i) {
    const int64_t per_rank = contexts[i].tokens / P;
    const int64_t first = me * per_rank, end = me == P - 1 ? contexts[i].tokens : first + per_rank;
    shards.push_back(contexts[i].rows(first, end));
    own_host_side[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
    own_moved[i] = KvCache(kLayers, kShape.n_kv_heads, kShape.head_dim);
  }
  const auto query_host = [&](size_t i) { return static_cast<int>(i) % P; };
  // Slots 0, 2, 4 ... keep theirs on the next rank; the rest on the query host.
  const auto own_host = [&](size_t i) { return i % 2 == 0 ? (query_host(i) + 1) % P : query_host(i); };

  for (int step = 0; step < 3; ++step) {
    std::vector<BatchedShardedQueryAttention::Slot> on_host(K), moved(K);
    int64_t total = 0, moved_rows_on_me = 0;
    for (size_t i = 0; i < K; ++i) {
      const int64_t rows = step == 0 ? 2 + static_cast<int64_t>(i % 3) : 1;
      on_host[i] = {&shards[i], nullptr, query_host(i) == me ? &own_host_side[i] : nullptr, {}, 0.0, rows};
      moved[i] = {&shards[i], nullptr, own_host(i) == me ? &own_moved[i] : nullptr, {}, 0.0, rows};
      if (own_host(i) != query_host(i)) {
        moved[i].own_host = own_host(i);
        moved[i].query_host = query_host(i);
        if (own_host(i) == me) moved_rows_on_me += rows;
      }
      total += rows;
    }
    Inputs in{normal(kLayers * total * kShape.q_floats(), rng), normal(kLayers * total * kShape.kv_floats(), rng),
              normal(kLayers * total * kShape.kv_floats(), rng)};
    BatchedShardedQueryAttention a(kShape, comm, on_host), b(kShape, comm, moved);
    const std::vector<float> expected = run(a, in, total, 0, total);
    const std::vector<float> got = run(b, in, total, 0, total);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0) << "step " << step;
    // The extra rows: the most any rank hosts off their query host.
    int64_t extra = moved_rows_on_me;
    std::vector<int64_t> all(static_cast<size_t>(P));
    ASSERT_TRUE(comm.all_gather(&extra, sizeof extra, all.data()).ok());
    extra = *std::max_element(all.begin(), all.end());
    EXPECT_EQ(b.floats_sent(), kLayers * (total + extra) * kShape.n_heads * (kShape.head_dim + 1)) << "step " << step;
  }
  for (size_t i = 0; i < K; ++i) {
    EXPECT_EQ(own_moved[i].tokens(), own_host(i) == me ? 4 + static_cast<int64_t>(i % 3) : 0) << "slot " << i;
  }
}

// A slot may keep its own tokens off the query host only with a plain context, and only on a real
// other rank; otherwise begin() names the slot and what is wrong.
TEST(BatchedQueryRanks, OwnTokensOffTheQueryHostNeedAPlainContextOnAnotherRank) {
  auto world = testing::world();
  Communicator& comm = *world;
  const int P = comm.size(), me = comm.rank();
  if (P == 1) GTEST_SKIP() << "needs a second rank";
  std::mt19937 rng(3);
  const Context context = random_context(20, rng);
  KvCache shard = context.rows(0, 20);
  KvCache own(kLayers, kShape.n_kv_heads, kShape.head_dim);
  const auto slot = [&](int own_host, int query_host, double skip, AttentionWindow window) {
    BatchedShardedQueryAttention::Slot s{&shard, nullptr, own_host == me ? &own : nullptr, window, skip, 1};
    s.own_host = own_host;
    s.query_host = query_host;
    return s;
  };
  const std::vector<std::pair<BatchedShardedQueryAttention::Slot, std::string>> bad{
      {slot(1, 0, 0.5, {}), "plain context"},
      {slot(1, 0, 0.0, {4, 8}), "plain context"},
      {slot(1, 1, 0.0, {}), "must be two ranks"},
      {slot(P, 0, 0.0, {}), "must be two ranks"},
      {slot(1, -1, 0.0, {}), "must be two ranks"},
  };
  for (const auto& [s, why] : bad) {
    BatchedShardedQueryAttention attention(kShape, comm, {s});
    const Status status = attention.begin(1);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << why;
    EXPECT_NE(status.message().find(why), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("slot 0"), std::string::npos) << status.message();
  }
  // A cache given on every rank: only own_host may hold it.
  BatchedShardedQueryAttention::Slot everywhere = slot(1, 0, 0.0, {});
  everywhere.own = &own;
  BatchedShardedQueryAttention attention(kShape, comm, {everywhere});
  const Status status = attention.begin(1);
  if (me == 1) {
    EXPECT_TRUE(status.ok()) << status.to_string();
  } else {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("must be on own_host 1 alone"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace star
