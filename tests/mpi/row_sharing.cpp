// Row sharing on 1–4 ranks: a forward whose shared rows each run their layers on one rank (the
// others receive the rows' q, k, v per layer and their final hidden states), or whose products of
// the shared rows each rank computes a slice of the output columns of (column sharing), gives every
// rank the logits of the forward in which every rank computes every row, bit for bit, with rows of
// its own in front (a Phase 1 chunk, different on every rank), whichever ranks own which rows. Bit for bit
// with Q8_0 weights, whose int8 tiles and panels give a row the same bits whatever rows sit beside
// it; with f32 weights the products are sgemm's, whose rounding may depend on the row count (it
// does with OpenBLAS on AVX2), so there within float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "star/attention/layer_attentions.h"
#include "star/engine/row_split.h"
#include "star/engine/runtime_model.h"
#include "star/model/row_sharing.h"
#include "support/mpi_model.h"
#include "support/mpi_world.h"

namespace star {
namespace {

struct Weights {
  const char* args;
  bool bitwise;
};

class RowSharingForward : public ::testing::TestWithParam<Weights> {
 protected:
  void SetUp() override {
    const std::string args = GetParam().args;
    const bool gguf = args.find("--format gguf") != std::string::npos;
    dir_ = std::make_unique<testing::SharedModelDir>(args, gguf ? "model.gguf" : "");
    ASSERT_TRUE(dir_->ok());
    auto m = open_model(dir_->path());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::make_unique<RuntimeModel>(std::move(*m));
  }

  const LlamaModel& llama() const { return *model_->llama; }

  // Logits of every row: rows [0, own) this rank's alone, one causal sequence from position 0 on
  // a cache of their own (as a Phase 1 chunk), then the shared rows, the same on every rank, from
  // position 0 on another cache (as a sequence's decode rows); with `owner`, shared by rows, with
  // `columns`, by columns.
  std::vector<float> logits(const std::vector<int32_t>& tokens, int64_t own, const std::vector<int32_t>* owner,
                            bool columns = false) {
    const LlamaConfig& c = llama().config();
    const AttentionShape shape = AttentionShape::of(c);
    KvCache own_cache(c.n_layers, c.n_kv_heads, c.head_dim), shared_cache(c.n_layers, c.n_kv_heads, c.head_dim);
    LocalCausalAttention own_attention(shape, own_cache), shared_attention(shape, shared_cache);
    const auto n = static_cast<int64_t>(tokens.size());
    RowSplitLayer<LayerAttention> attention(shape, {{&own_attention, own}, {&shared_attention, n - own}});
    std::vector<int32_t> positions;
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < n; ++i) {
      positions.push_back(static_cast<int32_t>(i < own ? i : i - own));
      rows.push_back(i);
    }
    RowSharing sharing;
    if (owner != nullptr) sharing = {.comm = world_.get(), .first_shared = own, .owner = *owner};
    if (columns) sharing = {.comm = world_.get(), .first_shared = own, .split = RowSharing::Split::kColumns, .owner = {}};
    const bool shared = owner != nullptr || columns;
    auto out = llama().forward_rows(tokens, positions, attention, rows, {}, shared ? &sharing : nullptr);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? *out : std::vector<float>{};
  }

  std::unique_ptr<MpiCommunicator> world_ = testing::world();
  std::unique_ptr<testing::SharedModelDir> dir_;
  std::unique_ptr<RuntimeModel> model_;
};

TEST_P(RowSharingForward, EqualsEveryRankComputingEveryRow) {
  const int rank = world_->rank(), ranks = world_->size();
  const auto vocab = static_cast<int32_t>(std::min<int64_t>(llama().config().vocab_size, 250));
  constexpr int64_t kShared = 11;
  std::mt19937 shared_rng(3);
  std::vector<int32_t> shared(kShared);
  for (int32_t& t : shared) t = static_cast<int32_t>(shared_rng() % vocab);
  // Owner patterns: balanced groups, everything on the last rank, every row on another rank in turn.
  const std::vector<int64_t> groups{3, 1, 1, 4, 2};
  std::vector<std::vector<int32_t>> owners{balanced_row_owners(groups, ranks),
                                           std::vector<int32_t>(kShared, ranks - 1), {}};
  for (int64_t i = 0; i < kShared; ++i) owners.back().push_back(static_cast<int32_t>((i * 7 + 1) % ranks));
  for (int64_t own : {0, 5}) {
    std::mt19937 own_rng(100 + rank);  // each rank's own rows differ
    std::vector<int32_t> tokens;
    for (int64_t i = 0; i < own + rank % 2; ++i) tokens.push_back(static_cast<int32_t>(own_rng() % vocab));
    const auto own_rows = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), shared.begin(), shared.end());
    const std::vector<float> alone = logits(tokens, own_rows, nullptr);
    // Every forward first (they are collectives: a rank leaving early would leave the others
    // waiting), then the comparisons.
    std::vector<std::vector<float>> split;
    for (const std::vector<int32_t>& owner : owners) split.push_back(logits(tokens, own_rows, &owner));
    split.push_back(logits(tokens, own_rows, nullptr, /*columns=*/true));
    for (size_t p = 0; p < split.size(); ++p) {
      EXPECT_EQ(split[p].size(), alone.size());
      if (split[p].size() != alone.size()) continue;
      size_t differ = 0, first = 0;
      for (size_t i = 0; i < alone.size(); ++i) {
        const float allowed = GetParam().bitwise ? 0.f : 1e-5f * (1.f + std::fabs(alone[i]));
        if (std::fabs(split[p][i] - alone[i]) > allowed && differ++ == 0) first = i;
      }
      EXPECT_EQ(differ, 0u) << "rank " << rank << " of " << ranks << ", " << own_rows << " own rows, owner pattern "
                            << p << " (" << owners.size() << ": by columns): first at logit " << first << " of " << alone.size() << ", "
                            << split[p][first] << " against " << alone[first];
    }
  }
}

TEST_P(RowSharingForward, RefusesSharingThatDoesNotFitTheRows) {
  const LlamaConfig& c = llama().config();
  KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
  LocalCausalAttention attention(AttentionShape::of(c), cache);
  const std::vector<int32_t> tokens{1, 2, 3}, positions{0, 1, 2};
  const std::vector<int64_t> rows{2};
  // Checked before any collective, the same on every rank: no rank is left waiting.
  RowSharing short_by_one{.comm = world_.get(), .first_shared = 1, .owner = {0}};
  auto wrong = llama().forward_rows(tokens, positions, attention, rows, {}, &short_by_one);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("do not make the forward's 3"), std::string::npos)
      << wrong.status().to_string();
  RowSharing outside{.comm = world_.get(), .first_shared = 1, .owner = {0, world_->size()}};
  auto stranger = llama().forward_rows(tokens, positions, attention, rows, {}, &outside);
  EXPECT_EQ(stranger.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stranger.status().message().find("owner rank"), std::string::npos) << stranger.status().to_string();
  RowSharing past_the_end{.comm = world_.get(), .first_shared = 4, .split = RowSharing::Split::kColumns, .owner = {}};
  auto columns = llama().forward_rows(tokens, positions, attention, rows, {}, &past_the_end);
  EXPECT_EQ(columns.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(columns.status().message().find("do not fit the forward's 3"), std::string::npos)
      << columns.status().to_string();
}

INSTANTIATE_TEST_SUITE_P(Weights, RowSharingForward,
                         ::testing::Values(Weights{"--preset tiny --seed 11 --heads 8 --kv-heads 2", false},
                                           // FFN 192: every layer matrix's rows whole Q8_0 blocks
                                           Weights{"--preset tiny --seed 11 --heads 8 --kv-heads 2 --hidden 192 "
                                                   "--format gguf --dtype q8_0",
                                                   true}));

}  // namespace
}  // namespace star
