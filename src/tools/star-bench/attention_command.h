// `star-bench attention`: the CPU attention kernel decoding (a few query tokens against a long KV
// cache) for each KV cache element type: the median wall time of repeated calls and the KV bytes
// read per second, so the cost of reading bf16 or q8_0 in place shows beside f32. With --sequences N,
// N decoding sequences on one context shard in one call (attention_forward_shared_keys, as the
// batched Phase 2 runs them), which decodes each key tile once for all of them.
//
//   star-bench attention --keys 8192,32768 --kv-dtype f32,bf16,q8_0 --repeats 7
//   star-bench attention --keys 1024 --kv-dtype bf16 --heads 12 --kv-heads 4 --head-dim 64 --sequences 1,16
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace star {

struct AttentionCommandOptions {
  std::vector<int64_t> keys{8192, 32768};
  std::vector<std::string> kv_dtypes{"f32", "bf16", "q8_0"};
  int64_t queries = 1;
  std::vector<int64_t> sequences{1};
  int64_t heads = 32;
  int64_t kv_heads = 8;
  int64_t head_dim = 128;
  int repeats = 7;
};

CLI::App* add_attention_command(CLI::App& app, AttentionCommandOptions& options);
int run_attention_command(const AttentionCommandOptions& options);

}  // namespace star
