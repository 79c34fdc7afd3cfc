// RocketKV stage 2, as a pure function: which KT pages one KV head attends to at a decode step.
//
//   channels: all d, or when topr < d the topr with the largest sum over g of |q[g][c]|
//   pos[c] = sum over g of q[g][c] > 0
//   s[g][p] = sum over the channels of q[g][c] * (pos[c] ? kmax[p][c] : kmin[p][c]) / sqrt(d)
//   score[p] = mean over g of softmax over p of s[g][p]
//   pages = ascending(top min(topk, P) p by score)
//
// Ties (channels and pages) go to the lower index.
#pragma once

#include <cstdint>
#include <vector>

#include "star/attention/rocket/kt_pages.h"

namespace star::rocket {

// q [group, d]: the query rows of the G query heads sharing this KV head (one decode token).
std::vector<int64_t> select_pages(const float* q, int64_t group, const KtPages& kt, int64_t topr, int64_t topk);

}  // namespace star::rocket
