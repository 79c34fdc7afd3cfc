// The Phase 1 algorithms, one entry each: name, help line, plan builder, parameter check and cost.
// Everything that lists, validates, plans or costs an algorithm reads this table (config
// validation and flag help, build_block_plan, phase1_cost, star-eval's matrix), so a new algorithm
// is one entry here plus its plan builder (src/attention/plans/) and its parameter check and cost
// (src/attention/algorithms/<name>.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "star/attention/attention_config.h"
#include "star/attention/block_ranges.h"
#include "star/attention/plans/plan_builders.h"
#include "star/common/status.h"
#include "star/model/llama_config.h"

namespace star {

// What an algorithm's cost reads: the model, the configuration, and the blocks cut the way its plan
// cuts them (one block of the whole context when the algorithm is not blocked).
struct CostInputs {
  const LlamaConfig& model;
  const AttentionConfig& config;
  int64_t context_tokens = 0;
  int n_ranks = 0;
  const BlockLayout& layout;
  int64_t largest_shard_tokens = 0;  // the most context tokens any rank holds
};

// One algorithm's Phase 1 on its busiest rank, in tokens and FLOPs; phase1_cost turns the tokens
// into bytes (cost_model.h describes each quantity).
struct Phase1Work {
  int64_t critical_path_tokens = 0;
  double attention_flops_per_layer = 0.0;
  int64_t kv_tokens_per_rank = 0;   // KV held after Phase 1 on the rank holding the most
  int64_t in_flight_kv_tokens = 0;  // remote KV held during a pass (ring's segment in transit)
};

struct AlgorithmEntry {
  std::string_view name;  // AttentionConfig::algorithm
  std::string_view help;  // one line for --help
  bool exact = false;     // equals dense up to rounding
  bool blocked = false;   // cuts the context into block_size blocks; otherwise one whole-context pass
  // Takes the block-edge repairs: boundary_overlap (block i > 0's pass also encodes block i-1's last
  // tokens, keeping only its own KV) and boundary_snap (edges move back onto sentence ends). An
  // exact or unblocked algorithm has no block edge to repair.
  bool repairs_block_edges = false;
  PlanBuilder build_plan = nullptr;
  // Range checks of the fields the algorithm owns. Every algorithm's check runs on every
  // configuration (validate_attention_config), so a bad value is refused before anyone switches to
  // the algorithm that reads it. Errors name the field, the value and what is allowed.
  Status (*check_parameters)(const AttentionConfig& config) = nullptr;
  Phase1Work (*phase1_work)(const CostInputs& inputs) = nullptr;
};

// Every registered algorithm, in table order (dense first).
std::span<const AlgorithmEntry> algorithm_registry();

// The entry named `name`, or nullptr; callers refuse an unknown name with algorithm_names().
const AlgorithmEntry* find_algorithm(std::string_view name);

// "dense, star, no-anchor, ring, pulsar, streaming": the registered names in table order.
std::string algorithm_names();

// The names of the algorithms that take the block-edge repairs, as algorithm_names() writes them.
std::string block_edge_repair_algorithm_names();

// Help for --attention: the names, each with its help line, one per line.
const std::string& algorithm_flag_help();

}  // namespace star
