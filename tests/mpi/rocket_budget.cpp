// RocketKV across 1–4 ranks: stage 1's global budget is exact (the ranks together keep
// prompt_budget tokens per layer and KV head, the very tokens one rank holding the whole context
// keeps), nothing dropped answers as dense, and a small budget shrinks every rank's KV.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <utility>

#include "star/attention/rocket/stage1.h"
#include "star/attention/rocket/token_budget.h"
#include "star/engine/cpu_engine_model.h"
#include "star/engine/inference.h"
#include "star/engine/rocket_compaction.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"

namespace star {
namespace {

class RocketBudget : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::SharedModelDir("--preset tiny --seed 5 --heads 8 --kv-heads 2 --max-positions 32768");
    ASSERT_TRUE(dir_->ok());
    auto m = open_model(dir_->path());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = new RuntimeModel(std::move(*m));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  static InferenceRequest request(int64_t context_len, const std::string& algorithm) {
    std::mt19937 rng(7);
    const int64_t vocab = std::min<int64_t>(model_->llama->config().vocab_size, 250);
    InferenceRequest r;
    for (int64_t i = 0; i < context_len; ++i) r.context_ids.push_back(static_cast<int32_t>(rng() % vocab));
    for (int i = 0; i < 6; ++i) r.query_ids.push_back(static_cast<int32_t>(rng() % vocab));
    r.attention.algorithm = algorithm;
    r.attention.block_size = (context_len + comm_size() - 1) / comm_size();
    r.generation.max_tokens = 12;
    r.generation.ignore_eos = true;
    r.generation.return_query_logits = true;
    return r;
  }
  static int comm_size() {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }

  InferenceOutcome run(const InferenceRequest& r) {
    Result<InferenceOutcome> out = run_inference(*model_, comm_, r);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? std::move(*out) : InferenceOutcome{};
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  Communicator& comm_ = *world_;
  static testing::SharedModelDir* dir_;
  static RuntimeModel* model_;
};

testing::SharedModelDir* RocketBudget::dir_ = nullptr;
RuntimeModel* RocketBudget::model_ = nullptr;

// Contiguous shards of uneven length, held in reverse rank order (so the query host is rank 0 and
// context order is not rank order), or the whole context on rank 0 with the others empty.
BlockPlan layout_plan(int64_t L, int ranks, bool reversed) {
  BlockPlan plan;
  plan.algorithm = reversed ? "star" : "dense";
  plan.context_tokens = L;
  plan.ranks.resize(ranks);
  if (!reversed) {
    for (RankPlan& r : plan.ranks) r.shard = {L, L};
    plan.ranks[0].shard = {0, L};
    return plan;
  }
  int64_t begin = 0;
  for (int b = 0; b < ranks; ++b) {
    const int64_t end = b + 1 == ranks ? L : begin + L / ranks + (b % 2 == 0 ? 7 : -5);
    plan.ranks[ranks - 1 - b].shard = {begin, end};
    begin = end;
  }
  plan.query_host = 0;
  return plan;
}

TEST_F(RocketBudget, GlobalBudgetIsExactAndEqualsOneRankTopK) {
  const LlamaConfig& c = model_->llama->config();
  const rocket::HeadShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  const int64_t L = 301, kvf = c.n_kv_heads * c.head_dim, qf = c.n_heads * c.head_dim;
  RocketConfig config;
  config.prompt_budget = 64;
  config.window_size = 8;
  config.kernel_size = 7;
  // Keys and values every rank draws alike: rank r stores its range, the host its window's queries.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> keys(c.n_layers), values(c.n_layers), qw(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (auto* v : {&keys[l], &values[l]}) {
      v->resize(L * kvf);
      for (float& x : *v) x = normal(rng);
    }
    qw[l].resize(config.window_size * qf);
    for (float& x : qw[l]) x = normal(rng);
  }
  // The window's first C rows are the last context tokens, the rest query tokens (in no shard).
  for (auto [reversed, C] : {std::pair{true, int64_t{8}}, std::pair{false, int64_t{8}}, std::pair{true, int64_t{3}}}) {
    SCOPED_TRACE((reversed ? "reversed uneven shards" : "all on rank 0") + std::string(", C=") + std::to_string(C));
    const BlockPlan plan = layout_plan(L, comm_.size(), reversed);
    ASSERT_TRUE(check_rocket_plan(plan, config).ok());
    const TokenRange mine = plan.ranks[comm_.rank()].shard;
    EngineModel& engine = *model_->engine;
    auto shard = engine.new_shard(mine.size());
    ASSERT_TRUE(shard.ok());
    KvCache& cache = dynamic_cast<CpuKvShard&>(**shard).cache;
    cache.grow(mine.size());
    for (int64_t l = 0; l < c.n_layers; ++l) {
      cache.store(l, 0, keys[l].data() + mine.begin * kvf, values[l].data() + mine.begin * kvf, mine.size());
    }
    rocket::WindowQueries window;
    if (comm_.rank() == plan.query_host) {
      window.rows = config.window_size;
      window.context_rows = C;
      window.q_floats = qf;
      for (const auto& q : qw) window.q.insert(window.q.end(), q.begin(), q.end());
    }
    auto compacted = compact_for_rocket(engine, comm_, plan, config, window, **shard);
    ASSERT_TRUE(compacted.ok()) << compacted.status().to_string();
    const rocket::CompactedKvCache& kept = dynamic_cast<CpuCompactedShard&>(**compacted).cache;

    for (int64_t l = 0; l < c.n_layers; ++l) {
      // One rank's stage 1 over the whole context (select_tokens when the window is all context).
      const int64_t W = config.window_size, scored = L - C;
      const auto lse = rocket::window_logsumexp(qw[l].data(), W, keys[l].data(), scored, shape);
      const auto scores = rocket::window_scores(qw[l].data(), W, keys[l].data(), scored, shape, lse);
      std::vector<std::vector<int64_t>> reference(c.n_kv_heads);
      for (int64_t kv = 0; kv < c.n_kv_heads; ++kv) {
        const auto pooled =
            rocket::max_pool_same(std::span(scores).subspan(kv * scored, scored), config.kernel_size);
        reference[kv] = rocket::top_ascending(pooled, config.prompt_budget - W);
        for (int64_t t = scored; t < L; ++t) reference[kv].push_back(t);
      }
      if (C == W) {
        EXPECT_EQ(reference, rocket::select_tokens(qw[l].data(), keys[l].data(), L, shape, config.prompt_budget, W,
                                                   config.kernel_size));
      }
      for (int64_t kv = 0; kv < c.n_kv_heads; ++kv) {
        std::vector<int64_t> expected;
        for (int64_t t : reference[kv]) {
          if (t >= mine.begin && t < mine.end) expected.push_back(t);
        }
        ASSERT_EQ(kept.kept(l, kv), static_cast<int64_t>(expected.size())) << "layer " << l << " kv " << kv;
        for (size_t i = 0; i < expected.size(); ++i) {
          EXPECT_EQ(std::memcmp(kept.keys(l, kv).data + i * kept.row_bytes(),
                                keys[l].data() + expected[i] * kvf + kv * c.head_dim, kept.row_bytes()),
                    0)
              << "layer " << l << " kv " << kv << " token " << expected[i];
          EXPECT_EQ(std::memcmp(kept.values(l, kv).data + i * kept.row_bytes(),
                                values[l].data() + expected[i] * kvf + kv * c.head_dim, kept.row_bytes()),
                    0);
        }
        int64_t count = kept.kept(l, kv);
        std::vector<int64_t> counts(comm_.size());
        ASSERT_TRUE(comm_.all_gather(&count, sizeof count, counts.data()).ok());
        EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), config.prompt_budget - config.window_size + C);
      }
    }
  }
}

TEST_F(RocketBudget, NothingDroppedAnswersAsDense) {
  for (const std::string algorithm : {"dense", "star", "ring"}) {
    SCOPED_TRACE(algorithm);
    InferenceRequest plain = request(301, algorithm);
    InferenceRequest sparse = plain;
    sparse.attention.sparse.algorithm = "rocket";
    sparse.attention.sparse.rocket.prompt_budget = 301;
    sparse.attention.sparse.rocket.topk = 1000;
    InferenceOutcome a = run(plain), b = run(sparse);
    if (comm_.rank() != 0) continue;
    ASSERT_EQ(a.generation.query_logits.size(), b.generation.query_logits.size());
    float worst = 0;
    for (size_t i = 0; i < a.generation.query_logits.size(); ++i) {
      worst = std::max(worst, std::abs(a.generation.query_logits[i] - b.generation.query_logits[i]));
    }
    // Each KV head attends in its own kernel call, so the rounding differs from the dense call's.
    EXPECT_LT(worst, 1e-4f);
    EXPECT_EQ(a.generation.tokens, b.generation.tokens);
    EXPECT_EQ(b.generation.tokens.size(), 12u);
  }
}

TEST_F(RocketBudget, SmallBudgetShrinksEveryShardAndContextsAnswerAgain) {
  InferenceRequest plain = request(401, "star");
  InferenceRequest sparse = plain;
  sparse.attention.sparse.algorithm = "rocket";
  RocketConfig& rc = sparse.attention.sparse.rocket;
  rc.prompt_budget = 64;
  rc.window_size = 8;
  rc.kernel_size = 7;
  rc.topk = 4;
  rc.page_size = 4;
  InferenceOutcome a = run(plain), b = run(sparse);
  ASSERT_EQ(b.shard_bytes.size(), static_cast<size_t>(comm_.size()));
  const LlamaConfig& c = model_->llama->config();
  const size_t row = static_cast<size_t>(c.head_dim) * sizeof(float);
  size_t total = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    EXPECT_LT(b.shard_bytes[r], a.shard_bytes[r] + (a.shard_bytes[r] == 0 ? 1 : 0)) << "rank " << r;
    total += b.shard_bytes[r];
  }
  // The window is the 6 query tokens and the last 2 context tokens: B − 6 context tokens' K and V
  // per layer and KV head, and two float rows (min, max) per KT page.
  const int64_t kept = rc.prompt_budget - static_cast<int64_t>(sparse.query_ids.size());
  const size_t kv_bytes = c.n_layers * c.n_kv_heads * kept * 2 * row;
  const size_t pages_bytes = c.n_layers * c.n_kv_heads * 2 * row;
  EXPECT_GE(total, kv_bytes + pages_bytes * (kept / rc.page_size));
  EXPECT_LE(total, kv_bytes + pages_bytes * (kept / rc.page_size + comm_.size()));
  if (comm_.rank() == 0) EXPECT_EQ(b.generation.tokens.size(), 12u);

  // The compacted context answers a second time exactly as the first (the shard is restored).
  Result<GenerationResult> again = answer_query(*model_, comm_, b, sparse.query_ids, sparse.generation);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  if (comm_.rank() == 0) EXPECT_EQ(again->tokens, b.generation.tokens);
}

// A token budget is the keys it derives for the request: the same tokens, logits and shards as a
// request that gives those keys.
TEST_F(RocketBudget, TokenBudgetRunsAsTheKeysItDerives) {
  InferenceRequest paper = request(401, "star");
  paper.attention.sparse.algorithm = "rocket";
  RocketConfig& budget = paper.attention.sparse.rocket;
  budget.token_budget = 64;
  budget.window_size = 8;
  budget.kernel_size = 7;
  InferenceRequest given = paper;
  given.attention.sparse.rocket = rocket::config_for_request(
      budget, static_cast<int64_t>(paper.context_ids.size() + paper.query_ids.size()), paper.generation.max_tokens,
      model_->llama->config().head_dim);
  given.attention.sparse.rocket.token_budget = 0;
  ASSERT_LT(given.attention.sparse.rocket.prompt_budget, 401);  // stage 1 drops tokens
  ASSERT_GT(given.attention.sparse.rocket.page_size, 1);
  InferenceOutcome a = run(paper), b = run(given);
  EXPECT_EQ(a.shard_bytes, b.shard_bytes);
  if (comm_.rank() != 0) return;
  EXPECT_EQ(a.generation.tokens, b.generation.tokens);
  EXPECT_EQ(a.generation.query_logits, b.generation.query_logits);
  EXPECT_EQ(a.generation.tokens.size(), 12u);
}

}  // namespace
}  // namespace star
