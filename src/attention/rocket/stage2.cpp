#include "star/attention/rocket/stage2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace star::rocket {

std::vector<int64_t> select_pages(const float* q, int64_t group, const KtPages& kt, int64_t topr, int64_t topk) {
  const int64_t d = kt.head_dim(), P = kt.pages();
  std::vector<double> magnitude(d, 0.0), direction(d, 0.0);
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t c = 0; c < d; ++c) {
      magnitude[c] += std::fabs(q[g * d + c]);
      direction[c] += q[g * d + c];
    }
  }
  std::vector<int64_t> channels(d);
  std::iota(channels.begin(), channels.end(), 0);
  if (topr < d) {
    std::partial_sort(channels.begin(), channels.begin() + topr, channels.end(), [&](int64_t a, int64_t b) {
      return magnitude[a] != magnitude[b] ? magnitude[a] > magnitude[b] : a < b;
    });
    channels.resize(topr);
  }

  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> score(P, 0.0), s(P);
  for (int64_t g = 0; g < group; ++g) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t p = 0; p < P; ++p) {
      const float* bound_min = kt.kmin(p);
      const float* bound_max = kt.kmax(p);
      double acc = 0;
      for (int64_t c : channels) {
        acc += q[g * d + c] * static_cast<double>(direction[c] > 0 ? bound_max[c] : bound_min[c]);
      }
      s[p] = acc * scale;
      m = std::max(m, s[p]);
    }
    double sum = 0;
    for (int64_t p = 0; p < P; ++p) sum += (s[p] = std::exp(s[p] - m));
    for (int64_t p = 0; p < P; ++p) score[p] += s[p] / sum / static_cast<double>(group);
  }

  std::vector<int64_t> pages(P);
  std::iota(pages.begin(), pages.end(), 0);
  const int64_t count = std::clamp<int64_t>(topk, 0, P);
  std::partial_sort(pages.begin(), pages.begin() + count, pages.end(), [&](int64_t a, int64_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  });
  pages.resize(count);
  std::sort(pages.begin(), pages.end());
  return pages;
}

}  // namespace star::rocket
