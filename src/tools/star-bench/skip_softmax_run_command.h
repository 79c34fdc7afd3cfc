// `star-bench skip-softmax-run` (under mpirun): Skip Softmax inside a model run, with the time spent
// in the attention kernel (cpu/attention_kernel_clock.h) apart from the rest of the model. Phase 1
// encodes a random context once, dense, with the plan of the attention flags; then each S (0, the
// dense kernel, first) answers the same query of --query tokens, the prefill chunk at the end of
// the prompt (the rows that see the most keys), and decodes --decode-tokens tokens, in rounds (after
// one unmeasured answer), every other round in reverse order, so load drifts hit every S alike. Per S, rank 0 prints one JSON line: the kernel time of the chunk
// and of each decoded token (the slowest rank's, median over rounds), the Skip Softmax tiles of
// both (every rank's), and the speedup over S = 0. scripts/bench/sparse_presets.py drives it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "star/attention/attention_config.h"

namespace star {

struct SkipSoftmaxRunCommandOptions {
  std::string model_path;
  int64_t context = 8192;  // tokens before the query chunk
  int64_t query = 512;
  int64_t decode_tokens = 8;
  int64_t rounds = 3;
  std::vector<double> scale_factors{10, 100, 1000, 10000};  // S = 0 is always measured
  AttentionConfig attention_flags;  // the Phase 1 plan
  std::string attention_config_file;
  std::string kv_dtype;
};

CLI::App* add_skip_softmax_run_command(CLI::App& app, SkipSoftmaxRunCommandOptions& options);
int run_skip_softmax_run_command(const CLI::App& command, const SkipSoftmaxRunCommandOptions& options);

}  // namespace star
