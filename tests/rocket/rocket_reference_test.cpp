// RocketKV's pure functions against tests/fixtures/rocket/rocket.txt, which
// tests/reference/make_rocket_fixtures.py computes with numpy from the algorithm's definition.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "star/attention/rocket/kt_pages.h"
#include "star/attention/rocket/stage1.h"
#include "star/attention/rocket/stage2.h"
#include "support/test_paths.h"

namespace star::rocket {
namespace {

// One fixture case: its header line's words and its data lines by keyword (rest of the line).
struct Case {
  std::vector<std::string> header;
  std::multimap<std::string, std::string> lines;

  int64_t field(size_t i) const { return std::stoll(header.at(i)); }
  template <typename T>
  std::vector<T> values(const std::string& key, size_t skip = 0) const {
    std::istringstream in(lines.find(key)->second);
    std::vector<T> out;
    T x;
    for (size_t i = 0; i < skip && in >> x; ++i) {}
    while (in >> x) out.push_back(x);
    return out;
  }
};

std::vector<Case> read_cases(const std::string& kind) {
  std::ifstream in(testing::source_dir() / "tests" / "fixtures" / "rocket" / "rocket.txt");
  EXPECT_TRUE(in) << "tests/fixtures/rocket/rocket.txt missing";
  std::vector<Case> cases;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "stage1" || key == "stage2") {
      inside = key == kind;
      if (!inside) continue;
      cases.emplace_back();
      for (std::string w; words >> w;) cases.back().header.push_back(w);
    } else if (inside) {
      std::string rest;
      std::getline(words, rest);
      cases.back().lines.emplace(key, rest);
    }
  }
  return cases;
}

TEST(RocketStage1, KeptIndicesEqualTheReference) {
  const std::vector<Case> cases = read_cases("stage1");
  ASSERT_EQ(cases.size(), 6u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header[0]);
    const HeadShape shape{c.field(1), c.field(2), c.field(3)};
    const int64_t L = c.field(4), budget = c.field(5), window = c.field(6), kernel = c.field(7);
    const std::vector<float> qw = c.values<float>("qw");
    const std::vector<float> keys = c.values<float>("keys");
    ASSERT_EQ(static_cast<int64_t>(keys.size()), L * shape.n_kv_heads * shape.head_dim);
    const auto keep = select_tokens(qw.data(), keys.data(), L, shape, budget, window, kernel);
    ASSERT_EQ(static_cast<int64_t>(keep.size()), shape.n_kv_heads);
    auto expected = c.lines.equal_range("keep");
    for (auto it = expected.first; it != expected.second; ++it) {
      std::istringstream in(it->second);
      int64_t kv;
      in >> kv;
      std::vector<int64_t> want;
      for (int64_t i; in >> i;) want.push_back(i);
      EXPECT_EQ(keep[kv], want) << "kv head " << kv;
      EXPECT_EQ(static_cast<int64_t>(keep[kv].size()), std::min(L, budget));
    }
  }
}

// The scores of keys split across ranks, normalized by the merged log-sum-exp, equal the scores
// over all keys at once (what the engine relies on to split the budget by a global top-k).
TEST(RocketStage1, SplitKeysGiveTheSameScores) {
  const Case c = read_cases("stage1").at(1);
  const HeadShape shape{c.field(1), c.field(2), c.field(3)};
  const int64_t window = c.field(6), T = c.field(4) - window, kvf = shape.n_kv_heads * shape.head_dim;
  const std::vector<float> qw = c.values<float>("qw");
  const std::vector<float> keys = c.values<float>("keys");
  const std::vector<double> whole_lse = window_logsumexp(qw.data(), window, keys.data(), T, shape);
  const std::vector<double> whole = window_scores(qw.data(), window, keys.data(), T, shape, whole_lse);

  const std::vector<int64_t> cuts{0, 70, 70, 301, T};  // an empty part included
  std::vector<double> parts;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    auto lse = window_logsumexp(qw.data(), window, keys.data() + cuts[i] * kvf, cuts[i + 1] - cuts[i], shape);
    parts.insert(parts.end(), lse.begin(), lse.end());
  }
  const std::vector<double> lse =
      merge_logsumexp(parts, static_cast<int64_t>(cuts.size()) - 1, shape.n_heads * window);
  for (size_t i = 0; i < lse.size(); ++i) EXPECT_NEAR(lse[i], whole_lse[i], 1e-12);
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t n = cuts[i + 1] - cuts[i];
    const auto scores = window_scores(qw.data(), window, keys.data() + cuts[i] * kvf, n, shape, lse);
    for (int64_t kv = 0; kv < shape.n_kv_heads; ++kv) {
      for (int64_t t = 0; t < n; ++t) EXPECT_NEAR(scores[kv * n + t], whole[kv * T + cuts[i] + t], 1e-12);
    }
  }
}

TEST(RocketStage1, MaxPoolCentresOddKernelsAndLeansLeftForEven) {
  const std::vector<double> x{1, 5, 2, 0, 0, 3, 0};
  EXPECT_EQ(max_pool_same(x, 1), x);
  EXPECT_EQ(max_pool_same(x, 3), (std::vector<double>{5, 5, 5, 2, 3, 3, 3}));
  EXPECT_EQ(max_pool_same(x, 4), (std::vector<double>{5, 5, 5, 5, 3, 3, 3}));
}

TEST(RocketStage1, TopTiesGoToTheLowerIndex) {
  EXPECT_EQ(top_ascending(std::vector<double>{1, 2, 2, 0, 2}, 2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(top_ascending(std::vector<double>{3, 1}, 5), (std::vector<int64_t>{0, 1}));
}

TEST(RocketStage2, SelectedPagesEqualTheReference) {
  const std::vector<Case> cases = read_cases("stage2");
  ASSERT_EQ(cases.size(), 5u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.header[0]);
    const int64_t G = c.field(1), d = c.field(2), page = c.field(3), tokens = c.field(4);
    const std::vector<float> q = c.values<float>("q");
    const std::vector<float> keys = c.values<float>("keys");
    KtPages kt(d, page);
    for (int64_t t = 0; t < tokens; ++t) kt.append(keys.data() + t * d);
    EXPECT_EQ(kt.pages(), (tokens + page - 1) / page);
    EXPECT_EQ(select_pages(q.data(), G, kt, c.field(5), c.field(6)), c.values<int64_t>("pages"));
  }
}

// Truncating to a page boundary and appending the rest again rebuilds the same bounds.
TEST(RocketKtPages, TruncateThenAppendRebuildsTheBounds) {
  const Case c = read_cases("stage2").at(0);
  const int64_t d = c.field(2), page = c.field(3), tokens = c.field(4);
  const std::vector<float> keys = c.values<float>("keys");
  KtPages whole(d, page), cut(d, page);
  for (int64_t t = 0; t < tokens; ++t) whole.append(keys.data() + t * d);
  for (int64_t t = 0; t < tokens; ++t) cut.append(keys.data() + t * d);
  cut.truncate_to_page(tokens - 6);
  EXPECT_EQ(cut.tokens() % page, 0);
  EXPECT_LE(cut.tokens(), tokens - 6);
  for (int64_t t = cut.tokens(); t < tokens; ++t) cut.append(keys.data() + t * d);
  ASSERT_EQ(cut.pages(), whole.pages());
  for (int64_t p = 0; p < whole.pages(); ++p) {
    for (int64_t i = 0; i < d; ++i) {
      EXPECT_EQ(cut.kmin(p)[i], whole.kmin(p)[i]);
      EXPECT_EQ(cut.kmax(p)[i], whole.kmax(p)[i]);
    }
  }
}

}  // namespace
}  // namespace star::rocket
