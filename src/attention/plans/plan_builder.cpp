#include "star/attention/plan_builder.h"

#include <cstdint>
#include <limits>
#include <string>

#include "star/attention/algorithm_registry.h"

namespace star {

Result<BlockPlan> build_block_plan(std::span<const int32_t> context_ids, int n_ranks,
                                   const AttentionConfig& config, std::span<const uint8_t> sentence_ends) {
  // Positions are int32 (EncodeStep::positions), and so is every query position after them.
  if (context_ids.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("context of " + std::to_string(context_ids.size()) +
                            " tokens exceeds the int32 position range");
  }
  const AlgorithmEntry* entry = find_algorithm(config.algorithm);
  if (entry == nullptr) {
    return invalid_argument("algorithm '" + config.algorithm + "' is unknown; allowed: " + algorithm_names());
  }
  return entry->build_plan(context_ids, n_ranks, config, sentence_ends);
}

std::vector<std::string_view> plan_algorithm_names() {
  std::vector<std::string_view> names;
  for (const AlgorithmEntry& entry : algorithm_registry()) names.push_back(entry.name);
  return names;
}

}  // namespace star
