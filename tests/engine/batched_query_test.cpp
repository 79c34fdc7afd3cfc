// Batched Phase 2 on one rank, through the engine: many sequences in one forward answer as each
// alone (float32 weights: within rounding, as BLAS takes another path for more rows; BF16 weights
// and at most kRowDotMaxRows rows: bit for bit; the attention itself is row-independent, bit for
// bit, see batched_attention_test.cpp), one slot answers as today's sharded_query with the query appended to the shard (within float
// rounding: the own-token split changes the summation order), forward_rows returns the rows of a
// full forward, and a row split runs its parts as separate forwards would.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "star/backend/cpu/matmul.h"
#include "star/dist/self_communicator.h"
#include "star/engine/cpu_engine_model.h"
#include "star/engine/inference.h"
#include "star/model/synthetic_model.h"
#include "support/temp_dir.h"

namespace star {
namespace {

RuntimeModel tiny_model(DType dtype = DType::kF32) {
  testing::TempDir dir;
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.seed = 11;
  spec.dtype = dtype;
  if (Status s = write_synthetic_model(spec, dir.path()); !s.ok()) ADD_FAILURE() << s.to_string();
  Result<RuntimeModel> model = open_model(dir.path());
  if (!model.ok()) ADD_FAILURE() << model.status().to_string();
  return std::move(*model);
}

std::vector<int32_t> tokens_of(int64_t n, int64_t vocab, int salt) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919 + 131 * salt + 7) % vocab);
  return t;
}

std::vector<int32_t> positions_from(int64_t first, int64_t n) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), static_cast<int32_t>(first));
  return p;
}

template <typename T>
T take(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return std::move(*result);
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// One sequence: its context (encoded once, read-only), its own tokens, its Phase 2 settings.
struct Sequence {
  int64_t context_len = 0;
  int64_t query_len = 0;
  AttentionWindow window;
  double skip_softmax = 0;
  int salt = 0;
  std::unique_ptr<KvShard> context, own;
  int64_t next_position = 0;

  std::vector<int32_t> rows_tokens(int step, int64_t vocab) const {
    return step == 0 ? tokens_of(query_len, vocab, salt + 100) : tokens_of(1, vocab, salt * 17 + step);
  }
};

class BatchedQuery : public ::testing::Test {
 protected:
  void SetUp() override { model_ = tiny_model(dtype()); }
  virtual DType dtype() const { return DType::kF32; }
  EngineModel& engine() { return *model_.engine; }
  int64_t vocab() { return engine().config().vocab_size; }

  // The context encoded causally on one rank, as a dense Phase 1 would.
  void encode(Sequence& s) {
    s.context = take(engine().new_shard(s.context_len));
    s.own = take(engine().new_shard(0));
    auto attention = engine().local_causal(*s.context);
    ASSERT_TRUE(attention.ok());
    ASSERT_TRUE(engine()
                    .forward(tokens_of(s.context_len, vocab(), s.salt), positions_from(0, s.context_len), **attention, 0)
                    .ok());
    s.next_position = s.context_len;
  }

  QuerySlot slot_of(Sequence& s, int step) {
    QuerySlot slot;
    slot.context = s.context.get();
    slot.own = s.own.get();
    slot.window = s.window;
    slot.skip_softmax_scale_factor = s.skip_softmax;
    slot.rows = step == 0 ? s.query_len : 1;
    return slot;
  }

  // Steps of Phase 2 for every sequence in one forward per step; the logits of each sequence's
  // last row, per step and sequence.
  std::vector<std::vector<std::vector<float>>> run_batched(std::vector<Sequence*> seqs, int steps,
                                                           std::vector<SkipSoftmaxTiles>* tiles = nullptr) {
    std::vector<std::vector<std::vector<float>>> logits(steps);
    for (int step = 0; step < steps; ++step) {
      std::vector<QuerySlot> slots;
      std::vector<int32_t> tokens, positions;
      std::vector<int64_t> last_rows;
      for (Sequence* s : seqs) {
        slots.push_back(slot_of(*s, step));
        const auto t = s->rows_tokens(step, vocab());
        const auto p = positions_from(s->next_position, static_cast<int64_t>(t.size()));
        tokens.insert(tokens.end(), t.begin(), t.end());
        positions.insert(positions.end(), p.begin(), p.end());
        last_rows.push_back(static_cast<int64_t>(tokens.size()) - 1);
        s->next_position += static_cast<int64_t>(t.size());
      }
      auto attention = engine().batched_query(self_, slots);
      EXPECT_TRUE(attention.ok()) << attention.status().to_string();
      if (!attention.ok()) return logits;
      auto out = engine().forward_rows(tokens, positions, **attention, last_rows);
      EXPECT_TRUE(out.ok()) << out.status().to_string();
      if (!out.ok()) return logits;
      EXPECT_EQ((*attention)->floats_sent(), 0);  // one rank never gathers
      for (size_t i = 0; i < seqs.size(); ++i) {
        logits[step].emplace_back(out->begin() + i * vocab(), out->begin() + (i + 1) * vocab());
        if (tiles != nullptr) {
          tiles->resize(seqs.size());
          (*tiles)[i] += (*attention)->slot_tiles(i);
        }
      }
    }
    return logits;
  }

  // A chunk's tokens and positions followed by the sequences' first Phase 2 rows: one fused
  // forward's input.
  std::pair<std::vector<int32_t>, std::vector<int32_t>> after_chunk(std::vector<int32_t> tokens,
                                                                    std::vector<int32_t> positions,
                                                                    std::initializer_list<Sequence*> seqs) {
    for (Sequence* s : seqs) {
      const auto t = s->rows_tokens(0, vocab());
      const auto p = positions_from(s->next_position, static_cast<int64_t>(t.size()));
      tokens.insert(tokens.end(), t.begin(), t.end());
      positions.insert(positions.end(), p.begin(), p.end());
    }
    return {std::move(tokens), std::move(positions)};
  }

  RuntimeModel model_;
  SelfCommunicator self_;
};

std::vector<Sequence> mixed_sequences() {
  std::vector<Sequence> seqs(4);
  seqs[0].context_len = 37, seqs[0].query_len = 5, seqs[0].salt = 1;
  seqs[1].context_len = 12, seqs[1].query_len = 1, seqs[1].salt = 2, seqs[1].skip_softmax = 4.0;
  seqs[2].context_len = 50, seqs[2].query_len = 3, seqs[2].salt = 3, seqs[2].window = {2, 9};
  seqs[3].context_len = 23, seqs[3].query_len = 7, seqs[3].salt = 4, seqs[3].skip_softmax = 0.5;
  return seqs;
}

TEST_F(BatchedQuery, ManySequencesInOneForwardAnswerAsEachAlone) {
  constexpr int kSteps = 4;
  std::vector<Sequence> together = mixed_sequences(), alone = mixed_sequences();
  std::vector<Sequence*> all;
  for (size_t i = 0; i < together.size(); ++i) {
    encode(together[i]);
    encode(alone[i]);
    all.push_back(&together[i]);
  }
  std::vector<SkipSoftmaxTiles> batched_tiles;
  const auto batched = run_batched(all, kSteps, &batched_tiles);
  ASSERT_EQ(batched_tiles.size(), together.size());
  float worst = 0;
  for (size_t i = 0; i < alone.size(); ++i) {
    std::vector<SkipSoftmaxTiles> own_tiles;
    const auto single = run_batched({&alone[i]}, kSteps, &own_tiles);
    for (int step = 0; step < kSteps; ++step) {
      ASSERT_EQ(batched[step].size(), together.size());
      worst = std::max(worst, max_abs_difference(batched[step][i], single[step][0]));
    }
    EXPECT_EQ(together[i].own->tokens(), together[i].query_len + kSteps - 1);
    EXPECT_EQ(together[i].context->tokens(), together[i].context_len);  // read-only
  }
  // Measured: about 1e-6 on the tiny model (logits of magnitude ~1).
  EXPECT_LT(worst, 1e-4f);
  std::printf("batched vs alone: max |logit difference| %.3g\n", worst);
  // Skip Softmax counts tiles for the slots that set S, and for no other.
  EXPECT_GT(batched_tiles[1].visited + batched_tiles[3].visited, 0);
  EXPECT_EQ(batched_tiles[0], SkipSoftmaxTiles{});
  EXPECT_EQ(batched_tiles[2], SkipSoftmaxTiles{});
}

// BF16 weights and at most kRowDotMaxRows rows: every projection runs the per-row dot kernels,
// whatever the row count, so the fused forward is bit for bit each sequence's own.
class BatchedQueryRowDots : public BatchedQuery {
 protected:
  DType dtype() const override { return DType::kBF16; }
  void expect_decode_rows_beside_a_chunk_bit_for_bit(int64_t chunk_rows);
};

TEST_F(BatchedQueryRowDots, ManySequencesInOneForwardAnswerAsEachAloneBitForBit) {
  constexpr int kSteps = 3;
  std::vector<Sequence> together = mixed_sequences(), alone = mixed_sequences();
  int64_t query_rows = 0;
  for (const Sequence& s : together) query_rows += s.query_len;
  ASSERT_LE(query_rows, cpu::kRowDotMaxRows);
  std::vector<Sequence*> all;
  for (size_t i = 0; i < together.size(); ++i) {
    encode(together[i]);
    encode(alone[i]);
    all.push_back(&together[i]);
  }
  std::vector<SkipSoftmaxTiles> batched_tiles;
  const auto batched = run_batched(all, kSteps, &batched_tiles);
  for (size_t i = 0; i < alone.size(); ++i) {
    std::vector<SkipSoftmaxTiles> own_tiles;
    const auto single = run_batched({&alone[i]}, kSteps, &own_tiles);
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_EQ(batched[step][i], single[step][0]) << "sequence " << i << " step " << step;
    }
    EXPECT_EQ(batched_tiles[i], own_tiles[0]) << "sequence " << i;
  }
}

// A Phase 1 chunk of chunk_rows rows beside two sequences' Phase 2 rows in one fused forward, told
// where the chunk ends: each sequence's logits are bit for bit its own without the chunk, and the
// chunk's are its forward's alone.
void BatchedQueryRowDots::expect_decode_rows_beside_a_chunk_bit_for_bit(int64_t chunk_rows) {
  std::vector<Sequence> fused = mixed_sequences(), apart = mixed_sequences();
  for (size_t i = 0; i < 2; ++i) {
    encode(fused[i]);
    encode(apart[i]);
  }
  const auto chunk_tokens = tokens_of(chunk_rows, vocab(), 9);
  const auto chunk_positions = positions_from(0, chunk_rows);
  auto chunk_shard = take(engine().new_shard(0));
  auto chunk = take(engine().local_causal(*chunk_shard));
  auto batched = take(engine().batched_query(self_, {slot_of(fused[0], 0), slot_of(fused[1], 0)}));
  const int64_t phase2_rows = fused[0].query_len + fused[1].query_len;
  auto split = take(engine().row_split({RowPart{chunk.get(), chunk_rows}, RowPart{batched.get(), phase2_rows}}));
  const auto [tokens, positions] = after_chunk(chunk_tokens, chunk_positions, {&fused[0], &fused[1]});
  const std::vector<int64_t> rows{chunk_rows - 1, chunk_rows - 1 + fused[0].query_len, chunk_rows - 1 + phase2_rows};
  auto together = take(engine().forward_rows(tokens, positions, *split, rows, {}, nullptr, /*phase1_rows=*/chunk_rows));

  auto chunk_alone_shard = take(engine().new_shard(0));
  auto chunk_alone = take(engine().local_causal(*chunk_alone_shard));
  const auto chunk_logits = take(engine().forward(chunk_tokens, chunk_positions, *chunk_alone, 1));
  const auto phase2 = run_batched({&apart[0], &apart[1]}, 1);
  const int64_t V = vocab();
  EXPECT_EQ(std::vector<float>(together.begin(), together.begin() + V), chunk_logits);
  EXPECT_EQ(std::vector<float>(together.begin() + V, together.begin() + 2 * V), phase2[0][0]);
  EXPECT_EQ(std::vector<float>(together.begin() + 2 * V, together.begin() + 3 * V), phase2[0][1]);
}

// More rows than the few-rows kernels take: forward_rows multiplies the decode rows apart from the
// chunk (a product over all the rows would take sgemm, which rounds otherwise).
TEST_F(BatchedQueryRowDots, DecodeRowsBesideAChunkAnswerBitForBitAsWithoutIt) {
  constexpr int64_t kChunk = 40;
  ASSERT_GT(kChunk, cpu::kRowTileMaxRows);
  expect_decode_rows_beside_a_chunk_bit_for_bit(kChunk);
}

// Few enough rows for the few-rows kernels together: the chunk and the decode rows are one product,
// with the bits of each apart: within every type's row dots, and past them up to the register
// tiles' limit (one product where the weights' kernel has a tile, two where it has not).
TEST_F(BatchedQueryRowDots, DecodeRowsBesideASmallChunkAnswerBitForBit) {
  static_assert(6 + 6 <= cpu::kRowDotMaxRows, "the chunk and the two sequences' 6 rows fit the row dots");
  static_assert(20 + 6 > cpu::kRowDotMaxRows && 20 + 6 <= cpu::kRowTileMaxRows, "past the row dots, within the tiles");
  for (int64_t chunk_rows : {int64_t{6}, int64_t{20}}) {
    SCOPED_TRACE("chunk of " + std::to_string(chunk_rows));
    expect_decode_rows_beside_a_chunk_bit_for_bit(chunk_rows);
  }
}

// Today's path: the query host appends the query and answer to (a copy of) the context shard.
TEST_F(BatchedQuery, OneSlotAnswersAsTheShardedQueryWithTheQueryAppended) {
  constexpr int kSteps = 5;
  for (AttentionWindow window : {AttentionWindow{}, AttentionWindow{2, 9}}) {
    Sequence seq;
    seq.context_len = 41, seq.query_len = 6, seq.salt = 5, seq.window = window;
    encode(seq);
    const auto batched = run_batched({&seq}, kSteps);

    auto shard = engine().new_shard(0);
    ASSERT_TRUE(engine().append(*seq.context, **shard).ok());
    auto attention = engine().sharded_query(self_, **shard, true, window);
    ASSERT_TRUE(attention.ok());
    int64_t position = seq.context_len;
    float worst = 0;
    for (int step = 0; step < kSteps; ++step) {
      const auto t = seq.rows_tokens(step, vocab());
      auto out = engine().forward(t, positions_from(position, static_cast<int64_t>(t.size())), **attention, 1);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      position += static_cast<int64_t>(t.size());
      worst = std::max(worst, max_abs_difference(*out, batched[step][0]));
    }
    // Measured: below 1e-5 on the tiny model (logits of magnitude ~1).
    EXPECT_LT(worst, 1e-4f) << "window " << window.window;
    RecordProperty("max_abs_logit_difference_window_" + std::to_string(window.window), std::to_string(worst));
    std::printf("single slot vs sharded_query, window %lld: max |logit difference| %.3g\n",
                static_cast<long long>(window.window), worst);
  }
}

TEST_F(BatchedQuery, ForwardRowsAreTheRowsOfTheFullForward) {
  const auto tokens = tokens_of(9, vocab(), 8);
  const auto positions = positions_from(0, 9);
  auto full_shard = take(engine().new_shard(0)), rows_shard = take(engine().new_shard(0));
  auto full_attention = take(engine().local_causal(*full_shard));
  auto rows_attention = take(engine().local_causal(*rows_shard));
  auto full = engine().forward(tokens, positions, *full_attention, 9);
  const std::vector<int64_t> rows{0, 3, 4, 8};
  auto picked = engine().forward_rows(tokens, positions, *rows_attention, rows);
  ASSERT_TRUE(full.ok() && picked.ok());
  ASSERT_EQ(picked->size(), rows.size() * vocab());
  // Within float rounding: this model's F32 output projection runs on BLAS, whose rounding may
  // depend on the row count (9 here, 4 there; it does with OpenBLAS on AVX2 without AVX-512).
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < vocab(); ++j) {
      const float want = (*full)[rows[i] * vocab() + j];
      ASSERT_NEAR((*picked)[i * vocab() + j], want, 1e-5f * std::max(1.f, std::abs(want)))
          << "row " << rows[i] << " column " << j;
    }
  }

  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{3, 3}, {4, 2}, {9}, {-1}}) {
    auto again = take(engine().local_causal(*rows_shard));
    auto refused = engine().forward_rows(tokens, positions, *again, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("logit row"), std::string::npos) << refused.status().message();
  }
}

// The ranks of a step share the output projection: their slices (vocab_slice_of_rank) cover the
// vocabulary once, in order, and forward_rows over each returns those columns of the whole logits
// (within float rounding: this model's F32 projection runs on BLAS, whose path depends on the
// slice's size); a slice outside the vocabulary is refused, naming it.
TEST_F(BatchedQuery, VocabSlicesOfTheRanksAreColumnsOfTheWholeLogits) {
  for (int64_t v : {int64_t{1}, int64_t{5}, int64_t{100}, int64_t{32769}}) {
    for (int ranks = 1; ranks <= 5; ++ranks) {
      int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const VocabSlice slice = vocab_slice_of_rank(v, r, ranks);
        EXPECT_EQ(slice.first, next) << "vocab " << v << " rank " << r << " of " << ranks;
        EXPECT_LE(slice.count, (v + ranks - 1) / ranks);
        next += slice.count;
      }
      EXPECT_EQ(next, v) << "vocab " << v << " on " << ranks << " ranks";
    }
  }

  const auto tokens = tokens_of(6, vocab(), 4);
  const auto positions = positions_from(0, 6);
  const std::vector<int64_t> rows{2, 5};
  auto logits = [&](VocabSlice slice) {
    auto shard = take(engine().new_shard(0));
    auto attention = take(engine().local_causal(*shard));
    return engine().forward_rows(tokens, positions, *attention, rows, slice);
  };
  const std::vector<float> whole = take(logits({}));
  ASSERT_EQ(whole.size(), rows.size() * vocab());
  for (int r = 0; r < 3; ++r) {
    const VocabSlice slice = vocab_slice_of_rank(vocab(), r, 3);
    const std::vector<float> part = take(logits(slice));
    ASSERT_EQ(part.size(), rows.size() * slice.count);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t j = 0; j < slice.count; ++j) {
        const float want = whole[i * vocab() + slice.first + j];
        ASSERT_NEAR(part[i * slice.count + j], want, 1e-5f * std::max(1.f, std::abs(want)))
            << "rank " << r << " row " << rows[i] << " column " << slice.first + j;
      }
    }
  }
  for (const VocabSlice bad : {VocabSlice{vocab() - 1, 2}, VocabSlice{-1, 1}, VocabSlice{vocab() + 1, -1}}) {
    auto refused = logits(bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("vocabulary slice"), std::string::npos) << refused.status().message();
  }
}

// A Phase 1 chunk's rows and two sequences' Phase 2 rows in one fused forward.
TEST_F(BatchedQuery, RowSplitRunsItsPartsAsSeparateForwards) {
  std::vector<Sequence> fused = mixed_sequences(), apart = mixed_sequences();
  for (size_t i = 0; i < 2; ++i) {
    encode(fused[i]);
    encode(apart[i]);
  }
  const auto chunk_tokens = tokens_of(6, vocab(), 9);
  const auto chunk_positions = positions_from(0, 6);

  auto chunk_shard = take(engine().new_shard(0));
  auto chunk = take(engine().local_causal(*chunk_shard));
  auto batched = take(engine().batched_query(self_, {slot_of(fused[0], 0), slot_of(fused[1], 0)}));
  const int64_t phase2_rows = fused[0].query_len + fused[1].query_len;
  auto split = engine().row_split({RowPart{chunk.get(), 6}, RowPart{batched.get(), phase2_rows}});
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const auto [tokens, positions] = after_chunk(chunk_tokens, chunk_positions, {&fused[0], &fused[1]});
  const std::vector<int64_t> rows{5, 5 + fused[0].query_len, 5 + phase2_rows};
  auto together = engine().forward_rows(tokens, positions, **split, rows);
  ASSERT_TRUE(together.ok()) << together.status().to_string();

  auto chunk_alone_shard = take(engine().new_shard(0));
  auto chunk_alone = take(engine().local_causal(*chunk_alone_shard));
  auto chunk_logits = engine().forward(chunk_tokens, chunk_positions, *chunk_alone, 1);
  ASSERT_TRUE(chunk_logits.ok());
  const auto phase2 = run_batched({&apart[0], &apart[1]}, 1);
  const int64_t V = vocab();
  // Within rounding, as above: the fused forward's matmuls see more rows.
  const std::vector<float> fused_chunk(together->begin(), together->begin() + V);
  const std::vector<float> fused_first(together->begin() + V, together->begin() + 2 * V);
  const std::vector<float> fused_second(together->begin() + 2 * V, together->begin() + 3 * V);
  EXPECT_LT(max_abs_difference(fused_chunk, *chunk_logits), 1e-4f);
  EXPECT_LT(max_abs_difference(fused_first, phase2[0][0]), 1e-4f);
  EXPECT_LT(max_abs_difference(fused_second, phase2[0][1]), 1e-4f);
  EXPECT_EQ(chunk_shard->tokens(), 6);

  auto mismatched = engine().row_split({RowPart{chunk.get(), 2}});
  ASSERT_TRUE(mismatched.ok());
  auto refused = engine().forward_rows(tokens, positions, **mismatched, std::vector<int64_t>{0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("row_split"), std::string::npos) << refused.status().message();
  EXPECT_EQ(engine().row_split({RowPart{nullptr, 1}}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BatchedQuery, BadSlotsAreRefusedNamingTheSlot) {
  Sequence seq;
  seq.context_len = 8, seq.query_len = 2, seq.salt = 6;
  encode(seq);
  QuerySlot missing = slot_of(seq, 0);
  missing.context = nullptr;
  auto refused = engine().batched_query(self_, {slot_of(seq, 0), missing});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("slot 1"), std::string::npos) << refused.status().message();

  // The slots' rows must be the forward's.
  auto attention = take(engine().batched_query(self_, {slot_of(seq, 0)}));
  auto wrong = engine().forward_rows(tokens_of(3, vocab(), 1), positions_from(8, 3), *attention,
                                     std::vector<int64_t>{2});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("batched query"), std::string::npos) << wrong.status().message();
}

}  // namespace
}  // namespace star
