// `star-bench rocket` (under mpirun): RocketKV's decode speed and KV bytes per rank against no
// sparsity, for several prompt budgets over one encoded context. Phase 1 runs once (recording the
// observation window); each budget compacts a copy of every rank's shard, and the budgets (none
// first) answer the same query in rounds, back to back, so load drifts hit them alike. Rank 0
// prints one JSON line per budget. scripts/bench/rocket_decode.py drives it over presets and lengths.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "star/attention/attention_config.h"

namespace star {

struct RocketCommandOptions {
  std::string model_path;
  int64_t context = 8192;
  int64_t query = 16;
  int64_t decode_tokens = 32;
  int64_t rounds = 3;                         // the median round is reported
  std::vector<int64_t> budgets{256, 512, 2048};  // prompt_budget values; none is always measured
  RocketConfig rocket;                        // the other RocketKV parameters
  AttentionConfig attention_flags;            // the Phase 1 plan
  std::string attention_config_file;
  std::string kv_dtype;
};

CLI::App* add_rocket_command(CLI::App& app, RocketCommandOptions& options);
int run_rocket_command(const CLI::App& command, const RocketCommandOptions& options);

}  // namespace star
