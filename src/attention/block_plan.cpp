#include "star/attention/block_plan.h"

#include <algorithm>

namespace star {

// A pass's input is the prefix built so far plus the step's own tokens. A ring segment has no
// prefix: the earlier segments' K/V reaches it over the ring, not as input tokens.
int64_t BlockPlan::longest_pass_tokens() const {
  int64_t longest = 0;
  for (const RankPlan& rank : ranks) {
    int64_t prefix = 0;
    for (const EncodeStep& step : rank.steps) {
      const auto tokens = static_cast<int64_t>(step.token_ids.size());
      switch (step.kind) {
        case EncodeStep::Kind::kExtendPrefix:
          longest = std::max(longest, prefix + tokens);
          prefix += tokens;
          break;
        case EncodeStep::Kind::kEncodeBlock: longest = std::max(longest, prefix + tokens); break;
        case EncodeStep::Kind::kRingSegment: longest = std::max(longest, tokens); break;
      }
    }
  }
  return longest;
}

}  // namespace star
