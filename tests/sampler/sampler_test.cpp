// Sampler: greedy, top-k / top-p truncation, empirical distributions against probabilities computed
// here in double precision, determinism, and parameter validation.
#include "star/engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>

#include "star/model/vocab_slice.h"

namespace star {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float spread = 4.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, spread);
  std::vector<float> logits(n);
  for (float& x : logits) x = dist(rng);
  return logits;
}

int32_t reference_argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// The distribution the sampler should draw from, computed independently in double:
// softmax(logits / T) restricted to the top_k largest, then to the smallest top_p prefix.
std::map<int32_t, double> expected_distribution(const std::vector<float>& logits,
                                                const SamplingParams& p) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < order.size()) order.resize(p.top_k);
  const double max_logit = logits[order[0]] / static_cast<double>(p.temperature);
  std::vector<double> prob;
  for (int32_t id : order) prob.push_back(std::exp(logits[id] / static_cast<double>(p.temperature) - max_logit));
  const double total = std::accumulate(prob.begin(), prob.end(), 0.0);
  size_t keep = order.size();
  double mass = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    mass += prob[i] / total;
    if (mass >= p.top_p) {
      keep = i + 1;
      break;
    }
  }
  const double kept_total = std::accumulate(prob.begin(), prob.begin() + static_cast<long>(keep), 0.0);
  std::map<int32_t, double> dist;
  for (size_t i = 0; i < keep; ++i) dist[order[i]] = prob[i] / kept_total;
  return dist;
}

// Draws `n` tokens and checks every one is in the expected support and that Pearson's chi-square
// statistic stays below a bound far in the tail (the draws are seeded, so this is deterministic).
void expect_frequencies_match(const std::vector<float>& logits, const SamplingParams& params,
                              int n = 60000) {
  const auto expected = expected_distribution(logits, params);
  Sampler sampler(params);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) {
    const int32_t id = sampler.sample(logits);
    ASSERT_TRUE(expected.count(id)) << "token " << id << " is outside the kept set";
    ++counts[id];
  }
  double chi2 = 0;
  for (const auto& [id, prob] : expected) {
    const double e = prob * n;
    const double o = counts[id];
    chi2 += (o - e) * (o - e) / e;
  }
  // For df <= 10 the chi-square 1e-6 upper quantile is below 50.
  ASSERT_LE(expected.size(), 11u);
  EXPECT_LT(chi2, 50.0) << "chi-square " << chi2 << " over " << expected.size() << " tokens";
}

TEST(Sampler, GreedyTakesArgmaxAndLowestIdOnTies) {
  Sampler greedy(SamplingParams{});
  const auto logits = random_logits(1000, 1);
  EXPECT_EQ(greedy.sample(logits), reference_argmax(logits));
  const std::vector<float> ties{1.f, 3.f, -2.f, 3.f, 3.f};
  EXPECT_EQ(greedy.sample(ties), 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> with_nan{nan, 0.5f, nan, 2.f, 1.f};
  EXPECT_EQ(greedy.sample(with_nan), 3);
}

// Past the short cases above: vocabulary-sized rows whose maximum, ties, NaN and infinities sit
// anywhere, including the tail after the last whole group of 16, against a plain first-maximum scan.
TEST(Sampler, GreedyOnLongRowsIsTheFirstLargestNotNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto first_largest = [](const std::vector<float>& logits) {
    int32_t best = -1;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (std::isnan(logits[i])) continue;
      if (best < 0 || logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    }
    return std::max(best, 0);
  };
  Sampler greedy(SamplingParams{});
  for (size_t n : {1u, 15u, 16u, 17u, 1000u, 32771u}) {
    for (uint32_t seed = 0; seed < 8; ++seed) {
      SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed));
      std::vector<float> logits = random_logits(n, seed);
      std::mt19937 rng(seed);
      std::uniform_int_distribution<size_t> at(0, n - 1);
      for (int i = 0; i < 5; ++i) logits[at(rng)] = nan;
      EXPECT_EQ(greedy.sample(logits), first_largest(logits));
      const size_t top = at(rng);
      logits[top] = 50.f;  // a tie later in the row loses, an earlier one wins
      logits[at(rng)] = 50.f;
      EXPECT_EQ(greedy.sample(logits), first_largest(logits));
      logits[n - 1] = inf;
      EXPECT_EQ(greedy.sample(logits), static_cast<int32_t>(n - 1));
      std::fill(logits.begin(), logits.end(), -inf);
      logits[at(rng)] = nan;
      EXPECT_EQ(greedy.sample(logits), first_largest(logits));
      std::fill(logits.begin(), logits.end(), nan);
      EXPECT_EQ(greedy.sample(logits), 0);
      std::fill(logits.begin(), logits.end(), 0.f);
      logits[n / 2] = -0.f;
      EXPECT_EQ(greedy.sample(logits), 0) << "-0 and +0 are equal: the first wins";
    }
  }
}

// The ranks' vocabulary slices (vocab_slice_of_rank) each send one candidate a row; the token picked
// among them must be the whole row's greedy token whatever the split: a maximum tied across a slice
// edge, NaN and -inf anywhere, slices of nothing but NaN, empty slices, -0 against +0.
TEST(Sampler, GreedyOverSlicesEqualsGreedyOverTheRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Sampler greedy(SamplingParams{});
  const auto over_slices = [](const std::vector<float>& logits, int ranks) {
    const auto vocab = static_cast<int64_t>(logits.size());
    std::vector<GreedyCandidate> candidates;
    for (int rank = 0; rank < ranks; ++rank) {
      const VocabSlice slice = vocab_slice_of_rank(vocab, rank, ranks);
      candidates.push_back(greedy_candidate(
          std::span<const float>(logits.data() + slice.first, static_cast<size_t>(slice.count)),
          static_cast<int32_t>(slice.first)));
    }
    return greedy_token(candidates);
  };
  for (size_t n : {1u, 2u, 17u, 1000u, 32771u}) {
    for (int ranks : {1, 2, 3, 4, 7}) {
      for (uint32_t seed = 0; seed < 6; ++seed) {
        SCOPED_TRACE("n " + std::to_string(n) + " ranks " + std::to_string(ranks) + " seed " + std::to_string(seed));
        std::vector<float> logits = random_logits(n, seed);
        std::mt19937 rng(seed);
        std::uniform_int_distribution<size_t> at(0, n - 1);
        for (int i = 0; i < 5; ++i) logits[at(rng)] = nan;
        EXPECT_EQ(over_slices(logits, ranks), greedy.sample(logits));
        // The same maximum at the end of one slice and the start of the next: the first wins.
        const auto edge = static_cast<size_t>(vocab_slice_of_rank(static_cast<int64_t>(n), 1, ranks).first);
        if (edge > 0 && edge < n) {
          logits[edge - 1] = 60.f;
          logits[edge] = 60.f;
          EXPECT_EQ(over_slices(logits, ranks), greedy.sample(logits));
          EXPECT_EQ(greedy.sample(logits), static_cast<int32_t>(edge - 1));
          logits[edge - 1] = nan;  // a NaN there hands it to the next slice
          EXPECT_EQ(over_slices(logits, ranks), static_cast<int32_t>(edge));
        }
        // A first slice of nothing but NaN, the rest -inf.
        std::fill(logits.begin(), logits.end(), -inf);
        std::fill(logits.begin(), logits.begin() + static_cast<int64_t>(std::min(n, edge == 0 ? 1 : edge)), nan);
        EXPECT_EQ(over_slices(logits, ranks), greedy.sample(logits));
        std::fill(logits.begin(), logits.end(), nan);
        EXPECT_EQ(over_slices(logits, ranks), 0);
        std::fill(logits.begin(), logits.end(), -0.f);
        logits[n - 1] = 0.f;
        EXPECT_EQ(over_slices(logits, ranks), 0) << "-0 and +0 are equal: the first wins";
      }
    }
  }
}

TEST(Sampler, TopKOneIsGreedy) {
  Sampler sampler(SamplingParams{1.5f, 1, 1.f, 42});
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const auto logits = random_logits(5000, seed, 1.f);
    EXPECT_EQ(sampler.sample(logits), reference_argmax(logits));
  }
}

TEST(Sampler, TinyTopPIsGreedy) {
  Sampler sampler(SamplingParams{1.f, 0, 1e-6f, 7});
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const auto logits = random_logits(5000, seed, 1.f);
    EXPECT_EQ(sampler.sample(logits), reference_argmax(logits));
  }
}

TEST(Sampler, TemperatureFrequencies) {
  const std::vector<float> logits{1.f, 0.5f, -0.3f, 2.f, 0.f, 1.2f};
  expect_frequencies_match(logits, SamplingParams{1.f, 0, 1.f, 11});
  expect_frequencies_match(logits, SamplingParams{0.6f, 0, 1.f, 12});
  expect_frequencies_match(logits, SamplingParams{2.5f, 0, 1.f, 13});
}

TEST(Sampler, TopKFrequencies) {
  const std::vector<float> logits{1.f, 0.5f, -0.3f, 2.f, 0.f, 1.2f, 1.9f, -1.f};
  expect_frequencies_match(logits, SamplingParams{1.f, 3, 1.f, 21});
  expect_frequencies_match(logits, SamplingParams{0.8f, 5, 1.f, 22});
}

TEST(Sampler, TopPFrequencies) {
  const std::vector<float> logits{1.f, 0.5f, -0.3f, 2.f, 0.f, 1.2f, 1.9f, -1.f};
  expect_frequencies_match(logits, SamplingParams{1.f, 0, 0.7f, 31});
  expect_frequencies_match(logits, SamplingParams{0.7f, 0, 0.9f, 32});
  expect_frequencies_match(logits, SamplingParams{1.3f, 4, 0.8f, 33});
}

TEST(Sampler, TopPOverLargeVocabularyKeepsOnlyTheNucleus) {
  // 128K tokens: 6 strong ones hold nearly all the mass, so top_p = 0.9 never leaves them.
  std::vector<float> logits = random_logits(128256, 5, 1.f);
  const std::vector<int32_t> strong{17, 9000, 50000, 77777, 100000, 128255};
  for (size_t i = 0; i < strong.size(); ++i) logits[strong[i]] = 20.f - static_cast<float>(i) * 0.3f;
  const auto expected = expected_distribution(logits, SamplingParams{1.f, 0, 0.9f, 0});
  ASSERT_LE(expected.size(), strong.size());
  expect_frequencies_match(logits, SamplingParams{1.f, 0, 0.9f, 41}, 500);
  expect_frequencies_match(logits, SamplingParams{1.f, 50, 0.9f, 42}, 500);
}

TEST(Sampler, FlatLargeVocabularyNucleusMatchesReference) {
  // A flat distribution: the nucleus holds thousands of tokens and the cut falls inside a bucket
  // of near-equal logits. Every draw must come from the reference nucleus, and the kept mass
  // must be the reference's.
  const auto logits = random_logits(32000, 6, 0.5f);
  const SamplingParams params{1.f, 0, 0.5f, 43};
  const auto expected = expected_distribution(logits, params);
  ASSERT_GT(expected.size(), 1000u);
  Sampler sampler(params);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(expected.count(sampler.sample(logits)));
  const SamplingParams top_k{1.f, 2000, 1.f, 44};
  const auto expected_k = expected_distribution(logits, top_k);
  ASSERT_EQ(expected_k.size(), 2000u);
  Sampler sampler_k(top_k);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(expected_k.count(sampler_k.sample(logits)));
}

TEST(Sampler, TopKTiesKeepLowestIds) {
  const std::vector<float> logits(10, 0.5f);
  Sampler sampler(SamplingParams{1.f, 3, 1.f, 3});
  for (int i = 0; i < 300; ++i) EXPECT_LT(sampler.sample(logits), 3);
}

TEST(Sampler, SameSeedSameSequence) {
  const auto logits = random_logits(32000, 9, 2.f);
  const SamplingParams params{0.9f, 40, 0.95f, 1234};
  Sampler a(params), b(params);
  Sampler other(SamplingParams{0.9f, 40, 0.95f, 1235});
  std::vector<int32_t> seq_a, seq_b, seq_other;
  for (int i = 0; i < 200; ++i) {
    seq_a.push_back(a.sample(logits));
    seq_b.push_back(b.sample(logits));
    seq_other.push_back(other.sample(logits));
  }
  EXPECT_EQ(seq_a, seq_b);
  EXPECT_NE(seq_a, seq_other);
}

TEST(Sampler, EveryCallConsumesOneDraw) {
  // Whatever a call's logits (here: nothing drawable, or a single kept token), the next call sees
  // the same generator state as a sampler that sampled ordinary logits instead.
  const auto logits = random_logits(1000, 10, 1.f);
  const std::vector<float> all_masked(1000, -std::numeric_limits<float>::infinity());
  std::vector<float> one_hot(1000, 0.f);
  one_hot[5] = 1e6f;
  const SamplingParams params{1.f, 0, 1.f, 77};
  Sampler a(params), b(params);
  for (int i = 0; i < 50; ++i) {
    (void)a.sample(i % 2 ? all_masked : one_hot);
    (void)b.sample(logits);
    ASSERT_EQ(a.sample(logits), b.sample(logits)) << "call " << i;
  }
}

TEST(Sampler, NonFiniteLogits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Sampler sampler(SamplingParams{1.f, 0, 1.f, 5});
  // -inf tokens are never drawn; NaN is ignored; a +inf token takes all the mass.
  const std::vector<float> masked{-inf, 0.f, nan, -inf, 0.f};
  for (int i = 0; i < 100; ++i) {
    const int32_t id = sampler.sample(masked);
    EXPECT_TRUE(id == 1 || id == 4) << id;
  }
  const std::vector<float> certain{0.f, inf, 3.f};
  EXPECT_EQ(sampler.sample(certain), 1);
}

TEST(ValidateSampling, AcceptsDefaultsAndRejectsOutOfRange) {
  EXPECT_TRUE(validate_sampling(SamplingParams{}).ok());
  EXPECT_TRUE(validate_sampling(SamplingParams{0.7f, 50, 0.9f, 1}).ok());
  auto expect_error = [](const SamplingParams& p, const std::string& field) {
    const Status s = validate_sampling(p);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  };
  expect_error(SamplingParams{-0.1f, 0, 1.f, 0}, "temperature");
  expect_error(SamplingParams{std::numeric_limits<float>::infinity(), 0, 1.f, 0}, "temperature");
  expect_error(SamplingParams{std::numeric_limits<float>::quiet_NaN(), 0, 1.f, 0}, "temperature");
  expect_error(SamplingParams{1.f, -1, 1.f, 0}, "top_k");
  expect_error(SamplingParams{1.f, 0, 0.f, 0}, "top_p");
  expect_error(SamplingParams{1.f, 0, 1.5f, 0}, "top_p");
  expect_error(SamplingParams{1.f, 0, std::numeric_limits<float>::quiet_NaN(), 0}, "top_p");
}

}  // namespace
}  // namespace star
