// `star-bench matmul`: the CPU matmul paths for a stored weight type, forced one at a time, at
// each activation row count: the row dots one (weight row, activation row) pair at a time, the
// same with the kernel's register tile, and float32 tiles widened and multiplied with sgemm. The
// median and minimum time of each, so the row counts where one path overtakes another (matmul.h's
// kRowTileMaxRows) are measured, not guessed. Threads: OMP_NUM_THREADS.
//
//   OMP_NUM_THREADS=1 star-bench matmul --dtype q8_0 --shape 2048x768,768x2048 --rows 1,4,16,32,64
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace star {

struct MatmulCommandOptions {
  std::vector<std::string> dtypes{"q8_0"};
  // m x k (output rows x row length): the `small` preset's up/gate and down projections.
  std::vector<std::string> shapes{"2048x768", "768x2048"};
  std::vector<int64_t> rows{1, 4, 8, 16, 20, 24, 32, 40, 48, 64, 96, 128};
  bool wide_activations = false;
  int repeats = 15;
};

CLI::App* add_matmul_command(CLI::App& app, MatmulCommandOptions& options);
int run_matmul_command(const MatmulCommandOptions& options);

}  // namespace star
