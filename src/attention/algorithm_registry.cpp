#include "star/attention/algorithm_registry.h"

#include "star/attention/algorithms/algorithm_parts.h"
#include "star/attention/pulsar_plan.h"
#include "star/attention/streaming_plan.h"

namespace star {
namespace {

// The one list of Phase 1 algorithms.
constexpr AlgorithmEntry kAlgorithms[] = {
    {"dense", "the whole context in one causal pass on rank 0", true, false, false, build_dense_plan,
     check_dense_parameters, dense_phase1_work},
    {"star", "block i > 0 as [anchor ‖ Bi], the anchor being the start of block 0", false, true, true,
     build_star_plan, check_star_parameters, star_phase1_work},
    {"no-anchor", "every block alone (ablation of star)", false, true, true, build_no_anchor_plan,
     check_no_anchor_parameters, no_anchor_phase1_work},
    {"ring", "each rank's blocks in one pass, earlier ranks' K/V passed around the ring", true, true, false,
     build_ring_plan, check_ring_parameters, ring_phase1_work},
    {"pulsar", "block i > 0 as [sink ‖ Σ0 … Σi-1 ‖ Bi], Σj the top-scored chunks of block j", false, true, true,
     build_pulsar_plan, check_pulsar_parameters, pulsar_phase1_work},
    {"streaming", "StreamingLLM: every token sees a sink and a sliding window", false, false, false,
     build_streaming_plan, check_streaming_parameters, streaming_phase1_work},
};

}  // namespace

std::span<const AlgorithmEntry> algorithm_registry() { return kAlgorithms; }

const AlgorithmEntry* find_algorithm(std::string_view name) {
  for (const AlgorithmEntry& entry : kAlgorithms) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string algorithm_names() {
  std::string names;
  for (const AlgorithmEntry& entry : kAlgorithms) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

std::string block_edge_repair_algorithm_names() {
  std::string names;
  for (const AlgorithmEntry& entry : kAlgorithms) {
    if (!entry.repairs_block_edges) continue;
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

const std::string& algorithm_flag_help() {
  static const std::string help = [] {
    std::string text = "Phase 1 algorithm:";
    for (const AlgorithmEntry& entry : kAlgorithms) {
      text += "\n  " + std::string(entry.name) + ": " + std::string(entry.help) + (entry.exact ? " (exact)" : "");
    }
    return text;
  }();
  return help;
}

}  // namespace star
