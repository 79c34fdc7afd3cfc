#include "attention_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "star/backend/cpu/attention.h"
#include "star/model/kv_dtype.h"

namespace star {

CLI::App* add_attention_command(CLI::App& app, AttentionCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("attention", "CPU decode attention over a long KV cache, per --kv-dtype");
  cmd->add_option("--keys", o.keys, "cache lengths (comma-separated)")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--kv-dtype", o.kv_dtypes, "KV element types (comma-separated): f32, bf16, q8_0")
      ->capture_default_str()->delimiter(',')->check(CLI::IsMember(kv_dtype_names()));
  cmd->add_option("--queries", o.queries, "query tokens (1: a decoding step)")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--sequences", o.sequences,
                  "decoding sequences sharing the cache in one call (comma-separated; 1: one query alone, causal)")
      ->capture_default_str()->delimiter(',')->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--heads", o.heads, "query heads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-heads", o.kv_heads, "key/value heads (divides --heads)")->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--head-dim", o.head_dim, "head dimension")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--repeats", o.repeats, "timed calls per cell (the median is reported)")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  return cmd;
}

int run_attention_command(const AttentionCommandOptions& o) {
  if (o.heads % o.kv_heads != 0) {
    std::fprintf(stderr, "--kv-heads %lld does not divide --heads %lld\n", static_cast<long long>(o.kv_heads),
                 static_cast<long long>(o.heads));
    return 2;
  }
  std::vector<KvDType> dtypes;
  for (const std::string& name : o.kv_dtypes) {
    Result<KvDType> dtype = parse_kv_dtype(name);
    Status s = dtype.ok() ? check_kv_dtype(*dtype, o.head_dim) : dtype.status();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 2;
    }
    dtypes.push_back(*dtype);
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  const float scale = 1.f / std::sqrt(static_cast<float>(o.head_dim));
  const int64_t most = *std::max_element(o.sequences.begin(), o.sequences.end());
  std::vector<float> q(static_cast<size_t>(most * o.queries * o.heads * o.head_dim));
  for (float& x : q) x = dist(rng);
  std::vector<float> out(q.size()), lse(static_cast<size_t>(most * o.queries * o.heads));
  std::printf("decode attention: %lld query tokens, %lld/%lld heads, head_dim %lld; median of %d calls\n",
              static_cast<long long>(o.queries), static_cast<long long>(o.heads), static_cast<long long>(o.kv_heads),
              static_cast<long long>(o.head_dim), o.repeats);
  std::printf("| keys | kv dtype | sequences | K+V MiB | median ms | min ms | ms a sequence | K+V GB/s | GFLOP/s |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (int64_t nk : o.keys) {
    const int64_t elements = nk * o.kv_heads * o.head_dim;
    std::vector<float> k(static_cast<size_t>(elements)), v(k.size());
    for (auto* t : {&k, &v}) for (float& x : *t) x = dist(rng);
    for (KvDType dtype : dtypes) {
      const int64_t bytes = kv_bytes(dtype, elements);
      std::vector<std::byte> k_stored(static_cast<size_t>(bytes)), v_stored(k_stored.size());
      encode_kv(dtype, k.data(), elements, k_stored.data());
      encode_kv(dtype, v.data(), elements, v_stored.data());
      const KvRows k_rows{k_stored.data(), dtype}, v_rows{v_stored.data(), dtype};
      const AttentionMask mask{true, nk - o.queries, {}};
      for (int64_t sequences : o.sequences) {
        auto call = [&] {
          if (sequences == 1) {
            cpu::attention_forward(q.data(), o.queries, k_rows, v_rows, nk, o.heads, o.kv_heads, o.head_dim, scale,
                                   mask, out.data(), lse.data());
          } else {
            cpu::attention_forward_shared_keys(q.data(), sequences, o.queries, k_rows, v_rows, nk, o.heads,
                                               o.kv_heads, o.head_dim, scale, out.data(), lse.data());
          }
        };
        call();  // first touch of the scratch and the caches
        std::vector<double> ms;
        for (int r = 0; r < o.repeats; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          call();
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        const double median = ms[ms.size() / 2];
        // Scores and values: two multiply-adds per query row, key and element.
        const double flops = 4.0 * static_cast<double>(sequences * o.queries * o.heads) * static_cast<double>(nk) *
                             static_cast<double>(o.head_dim);
        std::printf("| %lld | %s | %lld | %.1f | %.3f | %.3f | %.3f | %.2f | %.1f |\n", static_cast<long long>(nk),
                    kv_dtype_name(dtype), static_cast<long long>(sequences), 2.0 * bytes / (1 << 20), median, ms.front(),
                    median / static_cast<double>(sequences), 2.0 * bytes / (median * 1e6), flops / (median * 1e6));
      }
    }
  }
  return 0;
}

}  // namespace star
