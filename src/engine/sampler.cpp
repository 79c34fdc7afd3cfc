#include "star/engine/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace star {
namespace {

// The first largest logit that is not NaN, ties to the lowest id (-inf counts; -1 if every logit
// is NaN). Greedy decoding calls it once per row and step over the whole vocabulary (or a rank's
// slice of it), so it runs in vectors: each lane keeps its largest value and the first id that
// reached it (x > m is false for a NaN x and for -inf over -inf), then the lanes, the tail and the
// rare row of no finite value.
int64_t first_largest(std::span<const float> logits) {
  constexpr int kLanes = 16;
  using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
  using Ids = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));
  const auto n = static_cast<int64_t>(logits.size());
  const float* x = logits.data();
  Lanes most = Lanes{} - std::numeric_limits<float>::infinity();
  Ids first = Ids{} - 1;
  Ids id = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes, id += kLanes) {
    Lanes v;
    std::memcpy(&v, x + i, sizeof(v));
    const auto larger = v > most;
    most = larger ? v : most;
    first = larger ? id : first;
  }
  int64_t best = -1;
  for (int j = 0; j < kLanes; ++j) {
    if (first[j] < 0) continue;
    if (best < 0 || most[j] > x[best] || (most[j] == x[best] && first[j] < best)) best = first[j];
  }
  // The tail as the lanes: a value counts once it is above -inf.
  for (; i < n; ++i) {
    if (best < 0 ? x[i] > -std::numeric_limits<float>::infinity() : x[i] > x[best]) best = i;
  }
  if (best >= 0) return best;
  for (int64_t k = 0; k < n; ++k) {
    if (!std::isnan(x[k])) return k;
  }
  return -1;
}

// Id 0 when every logit is NaN.
int32_t argmax(std::span<const float> logits) { return static_cast<int32_t>(std::max<int64_t>(first_largest(logits), 0)); }

// The sampler's total order on candidates: larger scaled logit first, ties to the lower id.
template <typename Candidate>
bool more_likely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Buckets of (max logit - logit), 1/16 wide up to 64 (weights down to e^-64); one more bucket
// takes everything beyond, -inf included. Bucket order agrees with more_likely.
constexpr int kBucketsPerUnit = 16;
constexpr int kBuckets = 64 * kBucketsPerUnit + 1;

template <typename Candidate>
int bucket_of(const Candidate& c, float max_logit) {
  if (c.logit == max_logit) return 0;
  const float below_max = max_logit - c.logit;  // > 0, +inf for -inf logits
  return below_max < 64.f ? static_cast<int>(below_max * kBucketsPerUnit) : kBuckets - 1;
}

// Reorders [first, last) so that [first, result) is the smallest most-likely prefix (in
// more_likely order) for which enough(count, weight) holds; everything when none does.
// A histogram over buckets finds the bucket that holds the cut and only that bucket is sorted:
// linear time, where selecting by comparisons mispredicts a branch per token at 128K tokens.
template <typename It, typename Enough>
It most_likely_prefix(It first, It last, float max_logit, Enough enough) {
  std::vector<int64_t> count(kBuckets, 0);
  std::vector<double> weight(kBuckets, 0.0);
  for (It it = first; it != last; ++it) {
    const int b = bucket_of(*it, max_logit);
    ++count[b];
    weight[b] += it->weight;
  }
  int64_t n = 0;
  double w = 0.0;
  int cut = 0;
  while (cut < kBuckets && !enough(n + count[cut], w + weight[cut])) {
    n += count[cut];
    w += weight[cut];
    ++cut;
  }
  if (cut == kBuckets) return last;
  const auto in_bucket_before_cut = [&](const auto& c) { return bucket_of(c, max_logit) < cut; };
  const auto in_cut_bucket = [&](const auto& c) { return bucket_of(c, max_logit) == cut; };
  const It cut_begin = std::partition(first, last, in_bucket_before_cut);
  const It cut_end = std::partition(cut_begin, last, in_cut_bucket);
  std::sort(cut_begin, cut_end, [](const auto& a, const auto& b) { return more_likely(a, b); });
  for (It it = cut_begin; it != cut_end; ++it) {
    ++n;
    w += it->weight;
    if (enough(n, w)) return it + 1;
  }
  return cut_end;  // only reached through rounding in the weight sums
}

}  // namespace

Status validate_sampling(const SamplingParams& params) {
  if (!(params.temperature >= 0.f) || !std::isfinite(params.temperature)) {
    return invalid_argument("sampling: temperature must be a finite number >= 0 (0 = greedy), got " +
                            std::to_string(params.temperature));
  }
  if (params.top_k < 0) {
    return invalid_argument("sampling: top_k must be >= 0 (0 keeps all tokens), got " +
                            std::to_string(params.top_k));
  }
  if (!(params.top_p > 0.f && params.top_p <= 1.f)) {
    return invalid_argument("sampling: top_p must be in (0, 1], got " + std::to_string(params.top_p));
  }
  return ok_status();
}

GreedyCandidate greedy_candidate(std::span<const float> logits, int32_t first_id) {
  const int64_t at = first_largest(logits);
  if (at < 0) return {};
  return {logits[static_cast<size_t>(at)], first_id + static_cast<int32_t>(at)};
}

int32_t greedy_token(std::span<const GreedyCandidate> slices) {
  const GreedyCandidate* best = nullptr;
  for (const GreedyCandidate& c : slices) {
    // A later slice's ids are larger: it wins only with a strictly larger logit.
    if (c.id >= 0 && (best == nullptr || c.logit > best->logit)) best = &c;
  }
  return best == nullptr ? 0 : best->id;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  assert(validate_sampling(params).ok());
}

int32_t Sampler::sample(std::span<const float> logits) {
  assert(!logits.empty());
  if (params_.temperature == 0.f) return argmax(logits);
  // One draw per sampling call whatever happens below, so the sequence a seed gives never shifts.
  // 53 random bits -> u in [0, 1): the same on every platform, unlike std::uniform_real_distribution.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;

  candidates_.resize(logits.size());
  auto first = candidates_.begin();
  auto last = first;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    const float scaled = logits[i] / params_.temperature;
    *last++ = {scaled, 0.f, static_cast<int32_t>(i)};
    max_logit = std::max(max_logit, scaled);
  }
  // Nothing has a finite probability (all -inf or NaN): no distribution to draw from.
  if (max_logit == -std::numeric_limits<float>::infinity()) return argmax(logits);

  // Only the kept set matters: its order (deterministic) only decides where a draw lands.
  if (params_.top_k > 0 && params_.top_k < last - first) {
    const int64_t k = params_.top_k;
    last = most_likely_prefix(first, last, max_logit, [k](int64_t n, double) { return n >= k; });
  }
  double total = 0.0;
  for (auto it = first; it != last; ++it) {
    // A +inf logit takes all the mass: it alone equals the max.
    it->weight = it->logit == max_logit ? 1.f : std::exp(it->logit - max_logit);
    total += it->weight;
  }
  if (params_.top_p < 1.f) {
    const double target = static_cast<double>(params_.top_p) * total;
    last = most_likely_prefix(first, last, max_logit,
                              [target](int64_t, double w) { return w >= target; });
    total = 0.0;
    for (auto it = first; it != last; ++it) total += it->weight;
  }
  return draw(std::span<const Candidate>(&*first, static_cast<size_t>(last - first)), u * total);
}

int32_t Sampler::draw(std::span<const Candidate> kept, double target) {
  double cumulative = 0.0;
  for (const Candidate& c : kept) {
    cumulative += c.weight;
    if (cumulative > target) return c.id;
  }
  // Rounding can leave target at the very top: take the last candidate with any mass.
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    if (it->weight > 0.f) return it->id;
  }
  return kept.front().id;
}

}  // namespace star
