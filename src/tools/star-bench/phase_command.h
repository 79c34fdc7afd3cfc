// `star-bench phase` (under mpirun): one request with a random context of a given length through
// Phase 1 and Phase 2; rank 0 prints one JSON line with the critical path, per-rank times, decode
// speed and all-gather traffic. scripts/bench/phase_sweep.py drives it over lengths, ranks and
// algorithms; --backend cuda runs both phases on one GPU per rank.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "star/attention/attention_config.h"

namespace star {

struct PhaseCommandOptions {
  std::string model_path;
  int64_t context = 2048;
  int64_t query = 16;
  int64_t decode_tokens = 16;
  AttentionConfig attention_flags;
  std::string attention_config_file;
  std::string backend = "cpu";  // cpu | cuda (one GPU per rank)
  std::string kv_dtype;         // --kv-dtype; empty: the backend's own
};

CLI::App* add_phase_command(CLI::App& app, PhaseCommandOptions& options);
int run_phase_command(const CLI::App& command, const PhaseCommandOptions& options);

}  // namespace star
