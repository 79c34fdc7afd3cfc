#include <algorithm>

#include "star/attention/algorithms/algorithm_parts.h"

namespace star {

int64_t boundary_lead_tokens(const CostInputs& in, size_t i, int64_t not_before) {
  const TokenRange& previous = in.layout.blocks[i - 1];
  return previous.end - std::max({previous.end - in.config.boundary_overlap, previous.begin,
                                  std::min(not_before, previous.end)});
}

}  // namespace star
