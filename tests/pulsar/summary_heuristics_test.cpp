// Pulsar summary heuristics against hand-computed values (docs/algorithms.md, Pulsar paper Appendix C).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "star/attention/pulsar_summary.h"

namespace star {
namespace {

using Indices = std::vector<int64_t>;

// Three blocks of three tokens: df(1) = 3, df(2) = 2, df(3) = df(4) = df(5) = 1.
const std::vector<int32_t> kIds = {1, 2, 3, 1, 4, 4, 1, 2, 5};
const std::vector<TokenRange> kBlocks = {{0, 3}, {3, 6}, {6, 9}};

TEST(CorpusStats, DocumentFrequencyCountsBlocksNotOccurrences) {
  const CorpusStats stats(kIds, kBlocks);
  EXPECT_EQ(stats.n_blocks(), 3);
  EXPECT_EQ(stats.df(1), 3);
  EXPECT_EQ(stats.df(2), 2);
  EXPECT_EQ(stats.df(4), 1);  // twice in one block
  EXPECT_EQ(stats.df(9), 0);
}

TEST(CorpusStats, IdfIsLogOfBlocksOverDocumentFrequency) {
  const CorpusStats stats(kIds, kBlocks);
  EXPECT_DOUBLE_EQ(stats.idf(1), 0.0);
  EXPECT_DOUBLE_EQ(stats.idf(2), std::log(1.5));
  EXPECT_DOUBLE_EQ(stats.idf(3), std::log(3.0));
  EXPECT_DOUBLE_EQ(stats.idf(9), std::log(3.0));  // unseen: df clamped to 1
}

TEST(CorpusStats, Bm25IdfIsSmoothed) {
  const CorpusStats stats(kIds, kBlocks);
  // ln((N - df + 0.5) / (df + 0.5) + 1) with N = 3
  EXPECT_DOUBLE_EQ(stats.bm25_idf(1), std::log(0.5 / 3.5 + 1.0));
  EXPECT_DOUBLE_EQ(stats.bm25_idf(2), std::log(1.5 / 2.5 + 1.0));
  EXPECT_DOUBLE_EQ(stats.bm25_idf(3), std::log(2.5 / 1.5 + 1.0));
}

TEST(ChunkScores, MaxIdfTfIdfEntropy) {
  const CorpusStats stats(kIds, kBlocks);
  const std::vector<int32_t> chunk = {1, 2, 2, 3};
  EXPECT_DOUBLE_EQ(max_idf_score(chunk, stats), std::log(3.0));
  EXPECT_DOUBLE_EQ(tfidf_score(chunk, stats), (0.0 + 2.0 * std::log(1.5) + std::log(3.0)) / 4.0);
  EXPECT_DOUBLE_EQ(entropy_score(chunk), 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(entropy_score(std::vector<int32_t>{7, 7, 7, 7}), 0.25);
}

TEST(ChunkScores, Bm25ByHand) {
  const CorpusStats stats(kIds, kBlocks);
  const double k1 = 1.2;
  const double b = 0.75;
  // Chunk {2, 2, 3}, avgdl 3: K = k1 (1 - b + b * 3/3) = 1.2.
  {
    const double K = k1 * (1 - b + b * 3.0 / 3.0);
    const double expected = std::log(1.5 / 2.5 + 1) * 2 * (k1 + 1) / (2 + K) +  // token 2, tf 2
                            std::log(2.5 / 1.5 + 1) * 1 * (k1 + 1) / (1 + K);   // token 3, tf 1
    EXPECT_NEAR(bm25_score(std::vector<int32_t>{2, 3, 2}, stats, 3.0), expected, 1e-12);
    EXPECT_NEAR(expected, 0.4700036292 * 4.4 / 3.2 + 0.9808292530 * 2.2 / 2.2, 1e-9);  // ln 1.6, ln(8/3)
  }
  // A short chunk against a longer average is boosted: |C| = 2, avgdl 4, K = 1.2 * 0.625 = 0.75.
  {
    const double expected = std::log(0.5 / 3.5 + 1) * (k1 + 1) / (1 + 0.75) + std::log(2.5 / 1.5 + 1) * (k1 + 1) / (1 + 0.75);
    EXPECT_NEAR(bm25_score(std::vector<int32_t>{1, 3}, stats, 4.0), expected, 1e-12);
  }
}

TEST(ChunkScores, PermutedChunksTieExactly) {
  const CorpusStats stats(kIds, kBlocks);
  const std::vector<int32_t> a = {5, 2, 1, 4, 2};
  const std::vector<int32_t> b = {2, 4, 1, 2, 5};
  EXPECT_EQ(tfidf_score(a, stats), tfidf_score(b, stats));
  EXPECT_EQ(bm25_score(a, stats, 3.7), bm25_score(b, stats, 3.7));
}

TEST(Chunks, SplitKeepsAShorterLastChunk) {
  const std::vector<TokenRange> chunks = split_into_chunks({3, 13}, 4);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].begin, 3);
  EXPECT_EQ(chunks[1].begin, 7);
  EXPECT_EQ(chunks[2].begin, 11);
  EXPECT_EQ(chunks[2].end, 13);
  EXPECT_TRUE(split_into_chunks({5, 5}, 4).empty());
}

TEST(TopK, TiesGoToTheEarlierChunkAndResultIsPositional) {
  const std::vector<double> scores = {1.0, 3.0, 3.0, 2.0, 3.0};
  EXPECT_EQ(top_k_chunks(scores, 2), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(top_k_chunks(scores, 3), (std::vector<size_t>{1, 2, 4}));
  EXPECT_EQ(top_k_chunks(scores, 4), (std::vector<size_t>{1, 2, 3, 4}));
  // Highest is last, but the result is in positional order.
  EXPECT_EQ(top_k_chunks(std::vector<double>{5.0, 1.0, 9.0}, 2), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(top_k_chunks(scores, 9).size(), 5u);
  EXPECT_TRUE(top_k_chunks(scores, 0).empty());
}

TEST(Even, FloorOfLinspace) {
  EXPECT_EQ(even_offsets(10, 4), (Indices{0, 3, 6, 9}));
  EXPECT_EQ(even_offsets(10, 5), (Indices{0, 2, 4, 6, 9}));  // 0, 2.25, 4.5, 6.75, 9
  EXPECT_EQ(even_offsets(6, 4), (Indices{0, 1, 3, 5}));      // 0, 1.67, 3.33, 5
  EXPECT_EQ(even_offsets(5, 1), (Indices{0}));
  EXPECT_EQ(even_offsets(3, 10), (Indices{0, 1, 2}));
  EXPECT_TRUE(even_offsets(0, 4).empty());
}

TEST(Budget, ExplicitChunksOrRoundedFraction) {
  AttentionConfig c;
  EXPECT_EQ(summary_budget_chunks(c, 4096), 16);  // 12.5% of 4096 = 512 tokens = 16 chunks of 32
  EXPECT_EQ(summary_budget_chunks(c, 1000), 3);   // 125 tokens -> 3 whole chunks
  c.summary_chunks = 5;
  EXPECT_EQ(summary_budget_chunks(c, 4096), 5);
  c.summary_chunks = 0;
  c.summary_fraction = 0.29;  // 0.29 * 100 is 28.999999999999996 in binary; it rounds to 29 tokens
  c.chunk_tokens = 29;
  EXPECT_EQ(summary_budget_chunks(c, 100), 1);
}

// Two blocks of six tokens, chunks of four: chunk A = {7, 1, 1, 1} and chunk B = {8, 1} in block 0,
// where 7 and 8 occur only in block 0 and 1 in both blocks.
class ScoringChoice : public ::testing::Test {
 protected:
  const std::vector<int32_t> ids = {7, 1, 1, 1, 8, 1, /* block 1 */ 1, 2, 2, 2, 2, 1};
  const std::vector<TokenRange> blocks = {{0, 6}, {6, 12}};

  Indices summary_of_block0(SummaryScoring scoring) const {
    const SummaryParams params{.scoring = scoring, .chunk_tokens = 4, .budget_chunks = 1, .sink_tokens = 0};
    return select_summaries(ids, blocks, 1, params).at(0);
  }
};

TEST_F(ScoringChoice, MaxIdfTiesAndTakesTheEarlierChunk) {
  EXPECT_EQ(summary_of_block0(SummaryScoring::kMaxIdf), (Indices{0, 1, 2, 3}));
}

TEST_F(ScoringChoice, AveragingScoresPreferTheShortRareChunk) {
  EXPECT_EQ(summary_of_block0(SummaryScoring::kTfIdf), (Indices{4, 5}));    // ln2/2 > ln2/4
  EXPECT_EQ(summary_of_block0(SummaryScoring::kEntropy), (Indices{4, 5}));  // 2/2 > 2/4
}

TEST_F(ScoringChoice, Bm25UsesCorpusAverageChunkLength) {
  // Chunks 4, 2, 4, 2 tokens: avgdl 3. bm25 IDF: df 1 -> ln 2 (N = 2), df 2 -> ln 1.2.
  const double k1 = 1.2, b = 0.75, avgdl = 3.0;
  const double K_a = k1 * (1 - b + b * 4 / avgdl);
  const double K_b = k1 * (1 - b + b * 2 / avgdl);
  const double score_a = std::log(2.0) * (k1 + 1) / (1 + K_a) + std::log(1.2) * 3 * (k1 + 1) / (3 + K_a);
  const double score_b = std::log(2.0) * (k1 + 1) / (1 + K_b) + std::log(1.2) * (k1 + 1) / (1 + K_b);
  ASSERT_GT(score_b, score_a);  // 1.0136 > 0.8774
  EXPECT_EQ(summary_of_block0(SummaryScoring::kBm25), (Indices{4, 5}));
}

TEST(SelectSummaries, SinkIsNotPartOfBlock0Scoring) {
  // Block 0 starts with a rare token (a BOS-like id) inside the 4-token sink; the only other rare
  // token sits in the last, partial chunk [8, 10).
  std::vector<int32_t> ids(20);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 1 + static_cast<int32_t>(i % 5);
  ids[0] = 200;
  ids[9] = 100;
  const std::vector<TokenRange> blocks = {{0, 10}, {10, 20}};
  SummaryParams params{.scoring = SummaryScoring::kMaxIdf, .chunk_tokens = 4, .budget_chunks = 1, .sink_tokens = 4};
  EXPECT_EQ(select_summaries(ids, blocks, 1, params).at(0), (Indices{8, 9}));
  params.sink_tokens = 0;  // now [0, 4) competes, ties with [8, 10) and wins by position
  EXPECT_EQ(select_summaries(ids, blocks, 1, params).at(0), (Indices{0, 1, 2, 3}));
}

TEST(SelectSummaries, EvenPicksSingleTokensAfterTheSink) {
  std::vector<int32_t> ids(30, 1);
  const std::vector<TokenRange> blocks = {{0, 10}, {10, 20}, {20, 30}};
  const SummaryParams params{.scoring = SummaryScoring::kEven, .chunk_tokens = 2, .budget_chunks = 2, .sink_tokens = 4};
  const auto summaries = select_summaries(ids, blocks, 2, params);
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[0], (Indices{4, 5, 7, 9}));      // 4 + floor(linspace(0, 5, 4))
  EXPECT_EQ(summaries[1], (Indices{10, 13, 16, 19}));  // 10 + floor(linspace(0, 9, 4))
}

TEST(SelectSummaries, KCoversMoreChunksThanTheBlockHas) {
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6};
  const std::vector<TokenRange> blocks = {{0, 3}, {3, 6}};
  const SummaryParams params{.scoring = SummaryScoring::kMaxIdf, .chunk_tokens = 2, .budget_chunks = 5, .sink_tokens = 1};
  EXPECT_EQ(select_summaries(ids, blocks, 1, params).at(0), (Indices{1, 2}));
}

TEST(ParseScoring, NamesAndError) {
  EXPECT_EQ(*parse_summary_scoring("bm25"), SummaryScoring::kBm25);
  EXPECT_EQ(*parse_summary_scoring("even"), SummaryScoring::kEven);
  const Result<SummaryScoring> bad = parse_summary_scoring("maxidf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("maxidf"), std::string::npos);
}

}  // namespace
}  // namespace star
