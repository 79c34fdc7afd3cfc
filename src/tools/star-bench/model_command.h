// `star-bench model`: prefill and decode speed of one model on the CPU backend, against the sgemm
// rate and copy bandwidth measured on the same machine, or with --backend cuda on the GPU
// (cuda_model_command.h).
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
  std::string backend = "cpu";  // cpu | cuda
  std::string kv_dtype;         // --kv-dtype; empty: the backend's own
};

CLI::App* add_model_command(CLI::App& app, ModelCommandOptions& options);
int run_model_command(const ModelCommandOptions& options);

}  // namespace star
