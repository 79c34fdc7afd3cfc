// `star-bench skip-softmax`: the CPU attention kernel with Skip Softmax against the dense kernel,
// timed back to back (dense, sparse, dense, sparse, ...) so machine load hits both alike. Prefill is
// a query chunk at the end of an L-token prompt (the rows that see the most keys); decode is one
// token. Inputs are synthetic but peaked like trained attention: queries lean towards a shared
// direction that the first keys point along (an attention sink) with --sink-strength, so the
// skipped fraction depends on S the way it does in real models; random inputs alone hardly skip.
//
//   star-bench skip-softmax --keys 8192,16384 --queries 512 --scale-factors 10,100,1000,10000
#pragma once

#include <cstdint>
#include <vector>

#include <CLI/CLI.hpp>

namespace star {

struct SkipSoftmaxCommandOptions {
  std::vector<int64_t> keys{8192, 16384};
  std::vector<double> scale_factors{10, 100, 1000, 10000};
  int64_t queries = 512;  // 1: a decoding step
  int64_t heads = 9;      // SmolLM2-135M's geometry
  int64_t kv_heads = 3;
  int64_t head_dim = 64;
  int64_t sink_keys = 4;
  double sink_strength = 1.5;
  int repeats = 5;
};

CLI::App* add_skip_softmax_command(CLI::App& app, SkipSoftmaxCommandOptions& options);
int run_skip_softmax_command(const SkipSoftmaxCommandOptions& options);

}  // namespace star
