#include "skip_softmax_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "star/backend/cpu/attention.h"

namespace star {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

CLI::App* add_skip_softmax_command(CLI::App& app, SkipSoftmaxCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("skip-softmax", "CPU attention with Skip Softmax against dense, back to back");
  cmd->add_option("--keys", o.keys, "prompt lengths L (comma-separated)")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--scale-factors", o.scale_factors, "threshold_scale_factor values S (comma-separated)")
      ->capture_default_str()->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--queries", o.queries, "query tokens at the end of the prompt (1: a decoding step)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--heads", o.heads, "query heads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-heads", o.kv_heads, "key/value heads (divides --heads)")->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--head-dim", o.head_dim, "head dimension")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--sink-keys", o.sink_keys, "keys along the shared query direction")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sink-strength", o.sink_strength, "their length along it (0: uniform random inputs)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", o.repeats, "timed pairs per cell (medians are reported)")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  return cmd;
}

int run_skip_softmax_command(const SkipSoftmaxCommandOptions& o) {
  if (o.heads % o.kv_heads != 0) {
    std::fprintf(stderr, "--kv-heads %lld does not divide --heads %lld\n", static_cast<long long>(o.kv_heads),
                 static_cast<long long>(o.heads));
    return 2;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  const float scale = 1.f / std::sqrt(static_cast<float>(o.head_dim));
  std::vector<float> direction(static_cast<size_t>(o.head_dim));
  for (float& x : direction) x = unit(rng);
  std::printf("skip softmax: %lld query tokens, %lld/%lld heads, head_dim %lld, sink %lld keys x %.2f; "
              "median of %d back-to-back pairs\n",
              static_cast<long long>(o.queries), static_cast<long long>(o.heads), static_cast<long long>(o.kv_heads),
              static_cast<long long>(o.head_dim), static_cast<long long>(o.sink_keys), o.sink_strength, o.repeats);
  std::printf("| keys | S | lambda | visited | skipped | skipped %% | dense ms | sparse ms | speedup |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (int64_t nk : o.keys) {
    const int64_t nq = std::min(o.queries, nk);
    std::vector<float> q(static_cast<size_t>(nq * o.heads * o.head_dim));
    std::vector<float> k(static_cast<size_t>(nk * o.kv_heads * o.head_dim)), v(k.size());
    const float root_d = std::sqrt(static_cast<float>(o.head_dim));
    for (size_t i = 0; i < q.size(); ++i) q[i] = (unit(rng) + direction[i % direction.size()]) * root_d / 4.f;
    for (size_t i = 0; i < k.size(); ++i) {
      const bool sink = static_cast<int64_t>(i) < o.sink_keys * o.kv_heads * o.head_dim;
      k[i] = sink ? static_cast<float>(o.sink_strength) * direction[i % direction.size()] : 2.f * unit(rng);
    }
    for (float& x : v) x = unit(rng);
    std::vector<float> out(q.size()), lse(static_cast<size_t>(nq * o.heads));
    const AttentionMask mask{true, nk - nq, {}};
    auto call = [&](double s, SkipSoftmaxTiles* tiles) {
      const auto t0 = std::chrono::steady_clock::now();
      cpu::attention_forward(q.data(), nq, k.data(), v.data(), nk, o.heads, o.kv_heads, o.head_dim, scale, mask,
                             out.data(), lse.data(), SkipSoftmax{s, tiles});
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    call(0.0, nullptr);  // first touch of the scratch and the caches
    for (double s : o.scale_factors) {
      SkipSoftmaxTiles tiles;
      call(s, &tiles);
      std::vector<double> dense_ms, sparse_ms;
      for (int r = 0; r < o.repeats; ++r) {
        dense_ms.push_back(call(0.0, nullptr));
        sparse_ms.push_back(call(s, nullptr));
      }
      const double d = median(dense_ms);
      const double sp = median(sparse_ms);
      const double fraction = tiles.visited > 0 ? static_cast<double>(tiles.skipped) / tiles.visited : 0.0;
      std::printf("| %lld | %g | %.3g | %lld | %lld | %.1f | %.3f | %.3f | %.2f |\n", static_cast<long long>(nk), s,
                  s / static_cast<double>(nk), static_cast<long long>(tiles.visited),
                  static_cast<long long>(tiles.skipped), 100.0 * fraction, d, sp, d / sp);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace star
