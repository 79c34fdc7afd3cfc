// The evaluation matrix: algorithm names to configurations, blocking, and the Markdown tables.
#include <gtest/gtest.h>

#include "star/attention/attention_config_io.h"
#include "star/eval/eval_matrix.h"

namespace star::eval {
namespace {

TEST(EvalMatrix, DefaultAlgorithmsCoverEveryAlgorithmAndPulsarHeuristic) {
  const std::vector<std::string> expected = {"dense",       "ring",         "star",           "no-anchor",
                                             "pulsar-max_idf", "pulsar-tfidf", "pulsar-bm25", "pulsar-entropy",
                                             "pulsar-even", "streaming"};
  EXPECT_EQ(default_algorithms(), expected);
  for (const std::string& name : default_algorithms()) {
    auto c = algorithm_config(name, AttentionConfig{});
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_TRUE(validate_attention_config(*c).ok()) << name;
  }
}

TEST(EvalMatrix, NamesSetTheAlgorithmAndScoringAndKeepTheOtherParameters) {
  AttentionConfig base;
  base.sink_tokens = 16;
  base.chunk_tokens = 8;
  auto p = algorithm_config("pulsar-bm25", base);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->algorithm, "pulsar");
  EXPECT_EQ(p->scoring, "bm25");
  EXPECT_EQ(p->sink_tokens, 16);
  EXPECT_EQ(p->chunk_tokens, 8);
  auto n = algorithm_config("no-anchor", base);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->algorithm, "no-anchor");
  auto bad = algorithm_config("pulsar-random", base);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pulsar-random"), std::string::npos);
  auto unknown = algorithm_config("sparse", base);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown algorithm \"sparse\""), std::string::npos);
}

TEST(EvalMatrix, BlockedAlgorithmsSplitTheContextIntoTheGivenBlocks) {
  AttentionConfig star;
  star.algorithm = "star";
  EXPECT_EQ(with_blocks(star, 1000, 4).block_size, 250);
  EXPECT_EQ(with_blocks(star, 1001, 4).block_size, 251);  // the last block is shorter
  AttentionConfig dense;
  dense.algorithm = "dense";
  EXPECT_EQ(with_blocks(dense, 1000, 4).block_size, 0);
}

TEST(EvalMatrix, TablesShowPercentAndDifferencesToDense) {
  const std::vector<CellScore> cells = {{"a", 256, "dense", 1.0, 4},  {"b", 256, "dense", 0.5, 4},
                                        {"a", 256, "star", 0.75, 4},  {"b", 256, "star", 0.5, 4}};
  const std::string md = markdown_tables(cells, {"a", "b"}, {256}, {"dense", "star"});
  EXPECT_NE(md.find("### 256 tokens: score (%)"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | 100.0 | 75.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| b | 50.0 | 50.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **mean** | 75.0 | 62.5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | +0.0 | -25.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **mean** | +0.0 | -12.5 |"), std::string::npos) << md;
  // A missing cell shows as a dash; the means average the tasks every algorithm has (here only a).
  const std::string partial = markdown_tables({cells[0], cells[1], cells[2]}, {"a", "b"}, {256}, {"dense", "star"});
  EXPECT_NE(partial.find("| b | 50.0 | – |"), std::string::npos) << partial;
  EXPECT_NE(partial.find("| **mean** | 100.0 | 75.0 |"), std::string::npos) << partial;
}

}  // namespace
}  // namespace star::eval
