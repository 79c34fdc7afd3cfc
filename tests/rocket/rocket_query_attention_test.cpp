// RocketQueryAttention: a decode step attends exactly to stage 2's pages plus the newest rows, per
// KV head, checked against a plain softmax over those rows; a multi-token pass attends to every
// kept row with a causal mask among the new tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "star/attention/rocket/compacted_kv_cache.h"
#include "star/attention/rocket/rocket_query_attention.h"
#include "star/attention/rocket/stage2.h"
#include "star/dist/self_communicator.h"

namespace star::rocket {
namespace {

constexpr int64_t kHq = 4, kHkv = 2, kD = 32, kG = kHq / kHkv, kTokens = 120;

std::vector<float> normals(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Plain softmax attention of one query head row q [d] over the rows `rows` of k and v [*, d].
std::vector<float> attend(const float* q, const std::vector<float>& k, const std::vector<float>& v,
                          const std::vector<int64_t>& rows) {
  std::vector<double> w;
  double m = -INFINITY;
  for (int64_t r : rows) {
    double s = 0;
    for (int64_t c = 0; c < kD; ++c) s += q[c] * k[r * kD + c];
    w.push_back(s / std::sqrt(double{kD}));
    m = std::max(m, w.back());
  }
  double sum = 0;
  for (double& x : w) sum += (x = std::exp(x - m));
  std::vector<float> out(kD, 0.f);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t c = 0; c < kD; ++c) out[c] += static_cast<float>(w[i] / sum * v[rows[i] * kD + c]);
  }
  return out;
}

class RocketQuery : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(3);
    keys_ = normals(kTokens * kHkv * kD, rng);
    values_ = normals(kTokens * kHkv * kD, rng);
    KvCache full(1, kHkv, kD);
    full.grow(kTokens);
    full.store(0, 0, keys_.data(), values_.data(), kTokens);
    // Each head keeps its own rows: every third token for head 0, every second for head 1.
    std::vector<std::vector<int64_t>> keep(kHkv);
    for (int64_t t = 0; t < kTokens; ++t) {
      if (t % 3 == 0) keep[0].push_back(t);
      if (t % 2 == 0) keep[1].push_back(t);
    }
    cache_.keep_rows(0, full, keep);
    head_k_.resize(kHkv);
    head_v_.resize(kHkv);
    for (int64_t kv = 0; kv < kHkv; ++kv) {
      for (int64_t t : keep[kv]) append_row(keys_, values_, t, kv);
    }
    config_.window_size = 5;
    config_.page_size = 4;
    config_.topk = 3;
    config_.topr = 16;
  }

  // Appends head kv's row of token t of k and v [*, Hkv, d] to the per-head reference copies.
  void append_row(const std::vector<float>& k, const std::vector<float>& v, int64_t t, int64_t kv) {
    const auto at = static_cast<std::ptrdiff_t>((t * kHkv + kv) * kD);
    head_k_[kv].insert(head_k_[kv].end(), k.begin() + at, k.begin() + at + kD);
    head_v_[kv].insert(head_v_[kv].end(), v.begin() + at, v.begin() + at + kD);
  }
  // Appends every head's row of a new token.
  void append_reference(const std::vector<float>& k, const std::vector<float>& v, int64_t t) {
    for (int64_t kv = 0; kv < kHkv; ++kv) append_row(k, v, t, kv);
  }

  std::vector<float> keys_, values_;
  std::vector<std::vector<float>> head_k_, head_v_;
  CompactedKvCache cache_{1, kHkv, kD, KvDType::kF32, 4};
  RocketConfig config_;
  SelfCommunicator comm_;
};

TEST_F(RocketQuery, DecodeAttendsToTheTopPagesAndTheNewestRows) {
  std::mt19937 rng(5);
  RocketQueryAttention attention({kHq, kHkv, kD}, comm_, cache_, /*is_query_host=*/true, config_);
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<float> q = normals(kHq * kD, rng), k = normals(kHkv * kD, rng), v = normals(kHkv * kD, rng);
    append_reference(k, v, 0);
    std::vector<float> out(kHq * kD);
    ASSERT_TRUE(attention.begin(1).ok());
    ASSERT_TRUE(attention.attend(0, q.data(), k.data(), v.data(), 1, out.data()).ok());
    for (int64_t kv = 0; kv < kHkv; ++kv) {
      const int64_t rows = static_cast<int64_t>(head_k_[kv].size()) / kD;
      ASSERT_EQ(cache_.rows(0, kv), rows);
      // The reference selection: pages from independently built bounds, then the window and the token.
      KtPages pages(kD, config_.page_size);
      for (int64_t r = 0; r < rows; ++r) pages.append(head_k_[kv].data() + r * kD);
      std::set<int64_t> chosen;
      for (int64_t p : select_pages(q.data() + kv * kG * kD, kG, pages, config_.topr, config_.topk)) {
        for (int64_t r = p * config_.page_size; r < std::min(rows, (p + 1) * config_.page_size); ++r) chosen.insert(r);
      }
      for (int64_t r = rows - 1 - config_.window_size; r < rows; ++r) chosen.insert(r);
      const std::vector<int64_t> selected(chosen.begin(), chosen.end());
      ASSERT_LT(selected.size(), static_cast<size_t>(rows));
      for (int64_t g = 0; g < kG; ++g) {
        const int64_t h = kv * kG + g;
        const std::vector<float> want = attend(q.data() + h * kD, head_k_[kv], head_v_[kv], selected);
        for (int64_t c = 0; c < kD; ++c) EXPECT_NEAR(out[h * kD + c], want[c], 2e-5f) << "head " << h;
      }
    }
  }
}

TEST_F(RocketQuery, QueryPassAttendsToEveryKeptRowCausally) {
  std::mt19937 rng(9);
  constexpr int64_t n = 3;
  const std::vector<float> q = normals(n * kHq * kD, rng), k = normals(n * kHkv * kD, rng),
                           v = normals(n * kHkv * kD, rng);
  RocketQueryAttention attention({kHq, kHkv, kD}, comm_, cache_, /*is_query_host=*/true, config_);
  std::vector<float> out(n * kHq * kD);
  ASSERT_TRUE(attention.begin(n).ok());
  ASSERT_TRUE(attention.attend(0, q.data(), k.data(), v.data(), n, out.data()).ok());
  for (int64_t t = 0; t < n; ++t) {
    append_reference(k, v, t);
    for (int64_t kv = 0; kv < kHkv; ++kv) {
      std::vector<int64_t> visible(head_k_[kv].size() / kD);
      for (size_t r = 0; r < visible.size(); ++r) visible[r] = static_cast<int64_t>(r);
      for (int64_t g = 0; g < kG; ++g) {
        const int64_t h = kv * kG + g;
        const std::vector<float> want = attend(q.data() + (t * kHq + h) * kD, head_k_[kv], head_v_[kv], visible);
        for (int64_t c = 0; c < kD; ++c) EXPECT_NEAR(out[(t * kHq + h) * kD + c], want[c], 2e-5f);
      }
    }
  }
  EXPECT_EQ(attention.rows_attended(), attention.rows_held());
  // Truncating back to the kept rows restores the cache the query found.
  cache_.truncate(cache_.tokens() - n);
  EXPECT_EQ(cache_.rows(0, 0), 40);
  EXPECT_EQ(cache_.rows(0, 1), 60);
}

}  // namespace
}  // namespace star::rocket
