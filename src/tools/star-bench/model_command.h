// `star-bench model`: prefill and decode speed of the CPU backend on one model, against the sgemm
// rate and copy bandwidth measured on the same machine.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace star {

struct ModelCommandOptions {
  std::string model_path;
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 32;
  int repeats = 3;
};

CLI::App* add_model_command(CLI::App& app, ModelCommandOptions& options);
int run_model_command(const ModelCommandOptions& options);

}  // namespace star
