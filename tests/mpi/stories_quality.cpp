// stories260K, a 460-token story context in 4 blocks: how close each Phase 1 algorithm (star,
// no-anchor, pulsar with each heuristic, streaming) stays to dense. Reports greedy agreement and the
// mean KL divergence of next-token distributions over the query positions; star must be closer to
// dense than the no-anchor ablation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "star/dist/mpi_communicator.h"
#include "support/mpi_world.h"
#include "star/engine/inference.h"
#include "support/test_paths.h"

namespace star {
namespace {

std::vector<double> log_softmax(const float* logits, int64_t n) {
  double m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(logits[i] - m);
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = logits[i] - m - std::log(sum);
  return out;
}

// Mean over rows of KL(p || q), rows of `vocab` logits.
double mean_kl(const std::vector<float>& p_logits, const std::vector<float>& q_logits, int64_t vocab) {
  const int64_t rows = static_cast<int64_t>(p_logits.size()) / vocab;
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    auto lp = log_softmax(p_logits.data() + r * vocab, vocab);
    auto lq = log_softmax(q_logits.data() + r * vocab, vocab);
    for (int64_t i = 0; i < vocab; ++i) total += std::exp(lp[i]) * (lp[i] - lq[i]);
  }
  return total / rows;
}

double agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t same = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) same += a[i] == b[i];
  return a.empty() ? 1.0 : static_cast<double>(same) / static_cast<double>(a.size());
}

TEST(StoriesQuality, StarStaysCloserToDenseThanNoAnchor) {
  STAR_REQUIRE_STORIES260K(dir);
  Result<RuntimeModel> model = open_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  std::ifstream in(testing::source_dir() / "tests/fixtures/stories/story.txt");
  std::stringstream story;
  story << in.rdbuf();
  std::unique_ptr<MpiCommunicator> world = testing::world();
  Communicator& comm = *world;

  InferenceRequest base;
  base.context_ids = model->tokenizer->encode(story.str(), EncodeOptions{.add_bos = true});
  base.context_ids.resize(std::min<size_t>(base.context_ids.size(), 460));  // room for the query in 512
  base.query_ids = model->tokenizer->encode("Lily and Tom played with the kite until the sun went down. Then");
  base.generation.max_tokens = 24;
  base.generation.ignore_eos = true;
  base.generation.return_query_logits = true;
  const int64_t L = static_cast<int64_t>(base.context_ids.size());
  ASSERT_GT(L, 400);
  ASSERT_LT(L + static_cast<int64_t>(base.query_ids.size()) + 24, 512) << "stories260K was trained on 512 tokens";

  // Pulsar and streaming scaled to this short context: 16-token sink and chunks, 2 summary chunks
  // per block (about 28% of a block), a 128-token streaming window.
  auto run = [&](const std::string& variant) {
    InferenceRequest r = base;
    const size_t colon = variant.find(':');
    r.attention.algorithm = variant.substr(0, colon);
    if (colon != std::string::npos) r.attention.scoring = variant.substr(colon + 1);
    r.attention.block_size = (L + 3) / 4;  // 4 blocks whatever the rank count
    r.attention.sink_tokens = 16;
    r.attention.chunk_tokens = 16;
    r.attention.summary_chunks = 2;
    r.attention.streaming_sink = 16;
    r.attention.streaming_window = 128;
    Result<InferenceOutcome> out = run_inference(*model, comm, r);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? std::move(out->generation) : GenerationResult{};
  };
  const GenerationResult dense = run("dense");
  const int64_t vocab = model->llama->config().vocab_size;
  std::vector<std::pair<std::string, double>> kl;
  for (const std::string algorithm : {"star", "no-anchor", "pulsar:max_idf", "pulsar:tfidf", "pulsar:bm25",
                                      "pulsar:entropy", "pulsar:even", "streaming"}) {
    const GenerationResult g = run(algorithm);
    if (comm.rank() != 0) continue;
    const double d = mean_kl(dense.query_logits, g.query_logits, vocab);
    kl.emplace_back(algorithm, d);
    std::printf("stories260K L=%lld 4 blocks %d ranks: %-15s greedy agreement with dense %5.1f%%, "
                "mean KL over %zu query positions %.4f\n",
                static_cast<long long>(L), comm.size(), algorithm.c_str(), 100 * agreement(dense.tokens, g.tokens),
                base.query_ids.size(), d);
  }
  if (comm.rank() == 0) {
    ASSERT_EQ(kl.size(), 8u);
    EXPECT_LT(kl[0].second, kl[1].second) << "star should be closer to dense than no-anchor";
  }
}

}  // namespace
}  // namespace star
