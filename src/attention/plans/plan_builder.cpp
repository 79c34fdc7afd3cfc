#include "star/attention/plan_builder.h"

#include <cstdint>
#include <limits>
#include <string>

#include "star/attention/plans/plan_builders.h"
#include "star/attention/pulsar_plan.h"
#include "star/attention/streaming_plan.h"

namespace star {
namespace {

struct PlanBuilderEntry {
  std::string_view algorithm;
  PlanBuilder build;
};

// Every Phase 1 algorithm build_block_plan knows. A new one joins with one entry.
constexpr PlanBuilderEntry kPlanBuilders[] = {
    {"dense", build_dense_plan},
    {"star", build_star_plan},
    {"no-anchor", build_no_anchor_plan},
    {"ring", build_ring_plan},
    {"pulsar", build_pulsar_plan},
    {"streaming", build_streaming_plan},
};

std::string known_algorithms() {
  std::string names;
  for (const PlanBuilderEntry& entry : kPlanBuilders) {
    if (!names.empty()) names += ", ";
    names += entry.algorithm;
  }
  return names;
}

}  // namespace

Result<BlockPlan> build_block_plan(std::span<const int32_t> context_ids, int n_ranks,
                                   const AttentionConfig& config) {
  // Positions are int32 (EncodeStep::positions), and so is every query position after them.
  if (context_ids.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("context of " + std::to_string(context_ids.size()) +
                            " tokens exceeds the int32 position range");
  }
  for (const PlanBuilderEntry& entry : kPlanBuilders) {
    if (entry.algorithm == config.algorithm) return entry.build(context_ids, n_ranks, config);
  }
  return invalid_argument("algorithm '" + config.algorithm +
                          "' is unknown; allowed: " + known_algorithms());
}

std::vector<std::string_view> plan_algorithm_names() {
  std::vector<std::string_view> names;
  for (const PlanBuilderEntry& entry : kPlanBuilders) names.push_back(entry.algorithm);
  return names;
}

}  // namespace star
