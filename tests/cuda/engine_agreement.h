// The engine on the cuda backend against the engine on the CPU backend, for one request: the
// query's logits within bf16 tolerance, the same shard layout (bf16 KV: half the CPU's bytes), and
// greedy decoding checked by teacher forcing: the CPU's answer is appended to the query and every
// row whose CPU top-2 gap clears the tolerance must have the same argmax on the GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "star/engine/inference.h"

namespace star::testing {

// The GEMMs round activations to bf16 and the device KV is bf16: logits of unit scale move by
// well under 2% (relative L2) and by at most 0.15 anywhere.
constexpr double kLogitRelativeL2 = 0.03;
constexpr float kLogitWorst = 0.15f;

inline void expect_logits_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  ASSERT_FALSE(cpu.empty()) << what;
  double diff = 0, norm = 0;
  float worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double d = static_cast<double>(gpu[i]) - cpu[i];
    diff += d * d;
    norm += static_cast<double>(cpu[i]) * cpu[i];
    worst = std::max(worst, std::abs(gpu[i] - cpu[i]));
  }
  EXPECT_LT(std::sqrt(diff / norm), kLogitRelativeL2) << what << ": relative L2 error of the logits";
  EXPECT_LT(worst, kLogitWorst) << what << ": largest logit difference";
}

struct RowArgmax {
  int32_t id;
  float margin;  // over the runner-up
};

inline RowArgmax argmax_of(const float* row, int64_t vocab) {
  RowArgmax best{0, 0};
  float first = row[0], second = -INFINITY;
  for (int64_t v = 1; v < vocab; ++v) {
    if (row[v] > first) {
      second = first;
      first = row[v];
      best.id = static_cast<int32_t>(v);
    } else if (row[v] > second) {
      second = row[v];
    }
  }
  best.margin = first - second;
  return best;
}

using RunOn = std::function<Result<InferenceOutcome>(const InferenceRequest&)>;

// run_cpu / run_gpu run a request on each backend, collectively. Only `is_root` compares what
// rank 0 alone holds (logits and tokens).
inline void expect_engines_agree(InferenceRequest request, int64_t vocab, bool is_root, const RunOn& run_cpu,
                                 const RunOn& run_gpu) {
  request.generation.return_query_logits = true;
  request.generation.ignore_eos = true;
  request.generation.sampling = SamplingParams{};
  Result<InferenceOutcome> cpu = run_cpu(request);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  InferenceRequest forced = request;
  forced.query_ids.insert(forced.query_ids.end(), cpu->generation.tokens.begin(), cpu->generation.tokens.end());
  forced.generation.max_tokens = 1;
  Result<InferenceOutcome> cpu_forced = run_cpu(forced);
  ASSERT_TRUE(cpu_forced.ok()) << cpu_forced.status().to_string();

  Result<InferenceOutcome> gpu = run_gpu(request);
  ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
  Result<InferenceOutcome> gpu_forced = run_gpu(forced);
  ASSERT_TRUE(gpu_forced.ok()) << gpu_forced.status().to_string();

  EXPECT_EQ(gpu->shard_tokens, cpu->shard_tokens);
  ASSERT_EQ(gpu->shard_bytes.size(), cpu->shard_bytes.size());
  for (size_t r = 0; r < cpu->shard_bytes.size(); ++r) {
    EXPECT_EQ(2 * gpu->shard_bytes[r], cpu->shard_bytes[r]) << "rank " << r << ": bf16 KV is half the float32 bytes";
  }
  if (!is_root) return;
  expect_logits_close(gpu->generation.query_logits, cpu->generation.query_logits, "query logits");
  expect_logits_close(gpu_forced->generation.query_logits, cpu_forced->generation.query_logits,
                      "teacher-forced logits");
  // Row q - 1 + k of the forced run chose the k-th generated token.
  const auto q = static_cast<int64_t>(request.query_ids.size());
  int checked = 0;
  for (size_t k = 0; k < cpu->generation.tokens.size(); ++k) {
    const int64_t row = q - 1 + static_cast<int64_t>(k);
    const RowArgmax want = argmax_of(cpu_forced->generation.query_logits.data() + row * vocab, vocab);
    if (want.margin <= 2 * kLogitWorst) continue;  // a near tie: bf16 may pick either
    EXPECT_EQ(want.id, cpu->generation.tokens[k]) << "the CPU's forced run replays its greedy choice " << k;
    const RowArgmax got = argmax_of(gpu_forced->generation.query_logits.data() + row * vocab, vocab);
    EXPECT_EQ(got.id, want.id) << "generated token " << k << " (CPU margin " << want.margin << ")";
    ++checked;
  }
  EXPECT_GT(checked, 0) << "every greedy step was a near tie: the comparison checked nothing";
  // The free-running answers agree up to the first near tie.
  for (size_t k = 0; k < cpu->generation.tokens.size() && k < gpu->generation.tokens.size(); ++k) {
    const int64_t row = q - 1 + static_cast<int64_t>(k);
    if (argmax_of(cpu_forced->generation.query_logits.data() + row * vocab, vocab).margin <= 2 * kLogitWorst) break;
    EXPECT_EQ(gpu->generation.tokens[k], cpu->generation.tokens[k]) << "generated token " << k;
  }
}

}  // namespace star::testing
