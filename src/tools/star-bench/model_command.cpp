#include "model_command.h"

#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

#include "cuda_model_command.h"
#include "machine_rates.h"
#include "star/attention/layer_attentions.h"
#include "star/backend/backend_selection.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/model/llama_model.h"
#include "star/model/model_loader.h"

namespace star {
namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Multiply-adds per token in the linear layers (embedding lookup excluded, lm_head included).
double linear_flops_per_token(const LlamaConfig& c) {
  const double per_layer = c.dim * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.dim + 3.0 * c.dim * c.hidden_dim;
  return 2.0 * per_layer * c.n_layers;
}

// The stored bytes of every matrix a decoded token reads (the embedding row excluded).
double weight_bytes_read_per_token(const LlamaWeights& w) {
  double bytes = static_cast<double>(w.lm_head.bytes());
  for (const LlamaLayerWeights& l : w.layers) {
    for (const WeightTensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      bytes += static_cast<double>(t->bytes());
    }
  }
  return bytes;
}

}  // namespace

CLI::App* add_model_command(CLI::App& app, ModelCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("model", "prefill and decode against the machine's sgemm rate and copy bandwidth");
  cmd->add_option("--model", o.model_path, "HF model directory or .gguf file")->required();
  cmd->add_option("--prompt-tokens", o.prompt_tokens, "prefill length")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--decode-tokens", o.decode_tokens, "tokens decoded after the prefill")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--repeats", o.repeats, "best of this many prefills")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--backend", o.backend, "cpu, or cuda (the GPU, with per-kernel rooflines)")
      ->capture_default_str()->check(CLI::IsMember(backend_names()));
  return cmd;
}

int run_model_command(const ModelCommandOptions& o) {
  const std::string& model_path = o.model_path;
  const int64_t prompt_tokens = o.prompt_tokens, decode_tokens = o.decode_tokens;
  const int repeats = o.repeats;
  if (Status s = check_backend(o.backend); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    return 1;
  }
  // The weights alone: a benchmark of random token ids needs no tokenizer.
  Result<LoadedModel> loaded = load_model(model_path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str());
    return 1;
  }
  Result<LlamaModel> model = LlamaModel::create(std::move(loaded->config), std::move(loaded->weights));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  const LlamaModel& llama = *model;
  const LlamaConfig& c = llama.config();
  if (prompt_tokens + decode_tokens > c.max_position_embeddings) {
    std::fprintf(stderr, "--prompt-tokens + --decode-tokens exceed the model's %lld positions\n",
                 static_cast<long long>(c.max_position_embeddings));
    return 2;
  }
  if (o.backend == "cuda") return run_cuda_model_command(o, llama);
  std::mt19937 rng(7);
  std::vector<int32_t> prompt(prompt_tokens);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % c.vocab_size);
  std::vector<int32_t> positions(prompt_tokens);
  std::iota(positions.begin(), positions.end(), 0);

  const AttentionShape shape = AttentionShape::of(c);
  KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
  cache.reserve(prompt_tokens + decode_tokens);
  double prefill = 1e30;
  for (int r = 0; r < repeats; ++r) {
    cache.truncate(0);
    LocalCausalAttention attention(shape, cache);
    prefill = std::min(prefill, seconds_of([&] { (void)llama.forward(prompt, positions, attention, 1); }));
  }
  LocalCausalAttention attention(shape, cache);
  std::vector<int32_t> token{prompt.back()}, position{0};
  const double decode = seconds_of([&] {
    for (int64_t i = 0; i < decode_tokens; ++i) {
      position[0] = static_cast<int32_t>(cache.tokens());
      Result<std::vector<float>> logits = llama.forward(token, position, attention, 1);
      token[0] = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    }
  });

  const double attention_flops = 2.0 * prompt_tokens * prompt_tokens * c.n_heads * c.head_dim * c.n_layers;  // causal
  const double prefill_flops = linear_flops_per_token(c) * prompt_tokens + attention_flops +
                               2.0 * c.dim * c.vocab_size;
  const double prefill_gflops = prefill_flops / prefill / 1e9;
  const double mean_kv_bytes = cache.bytes_per_token() * (prompt_tokens + decode_tokens / 2.0);
  const double decode_gbps = (weight_bytes_read_per_token(llama.weights()) + mean_kv_bytes) * decode_tokens / decode / 1e9;
  // Before the machine-rate measurements below, which allocate buffers of their own.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double sgemm = measure_sgemm_gflops(prompt_tokens, c.hidden_dim, c.dim);
  const double copy = measure_copy_gbps();

  std::printf("weights %s (output %s), row-dot kernels %s\n", dtype_name(llama.weights().layers[0].w_up.dtype),
              dtype_name(llama.weights().lm_head.dtype), cpu::isa_name(cpu::best_isa()));
  std::printf("model %s: %lld parameters, dim %lld, %lld layers, %lld/%lld heads, vocab %lld\n", model_path.c_str(),
              static_cast<long long>(c.parameter_count()), static_cast<long long>(c.dim),
              static_cast<long long>(c.n_layers), static_cast<long long>(c.n_heads),
              static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.vocab_size));
  std::printf("peak RSS after prefill and decode: %.1f MiB\n", peak_rss_mib);
  std::printf("| measure | value | machine reference | fraction |\n|---|---|---|---|\n");
  std::printf("| prefill %lld tokens | %.1f tokens/s, %.1f GFLOP/s | sgemm %lldx%lldx%lld: %.1f GFLOP/s | %.0f%% |\n",
              static_cast<long long>(prompt_tokens), prompt_tokens / prefill, prefill_gflops,
              static_cast<long long>(prompt_tokens), static_cast<long long>(c.hidden_dim),
              static_cast<long long>(c.dim), sgemm, 100 * prefill_gflops / sgemm);
  std::printf("| decode %lld tokens | %.2f tokens/s, %.2f GB/s read | memcpy: %.2f GB/s copied | %.0f%% |\n",
              static_cast<long long>(decode_tokens), decode_tokens / decode, decode_gbps, copy,
              100 * decode_gbps / copy);
  std::printf("| | | memcpy, STREAM convention (read + write): %.2f GB/s | %.0f%% |\n", 2 * copy,
              100 * decode_gbps / (2 * copy));
  return 0;
}

}  // namespace star
