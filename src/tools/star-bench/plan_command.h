// `star-bench plan`: the Phase 1 cost model as a table, for one model, several context lengths and
// a rank count: the requested algorithm beside star and dense.
//
//   star-bench plan --preset llama-3.1-8b --ranks 4 --attention pulsar --summary-tokens 512
//                   --context 16384,32768,65536
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "star/attention/attention_config.h"

namespace star {

struct PlanCommandOptions {
  std::string preset;        // a built-in model shape (cost_model_preset)
  std::string model_config;  // or a Hugging Face config.json
  std::vector<int64_t> contexts;
  int ranks = 0;
  std::string kv_dtype = "bf16";  // the KV cache element type the memory column counts
  AttentionConfig attention_flags;
  std::string attention_config_file;
};

// Registers the `plan` subcommand on `app`; options are written into `options` when parsed.
CLI::App* add_plan_command(CLI::App& app, PlanCommandOptions& options);

// Prints the table to stdout; returns the process exit code (errors go to stderr).
int run_plan_command(const CLI::App& command, const PlanCommandOptions& options);

}  // namespace star
