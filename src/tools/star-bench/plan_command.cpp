#include "plan_command.h"

#include <cstdio>
#include <iostream>
#include <string>

#include "star/attention/attention_config_io.h"
#include "star/attention/cost_model.h"

namespace star {
namespace {

// 5696 -> "5,696"
std::string with_thousands(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text = value < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// 43980465111040 FLOPs -> "43,980.5"
std::string gflops(double flops) {
  const auto tenths = static_cast<int64_t>(flops / 1e8 + 0.5);
  return with_thousands(tenths / 10) + "." + std::to_string(tenths % 10);
}

// Binary units: 335544320 -> "320.0 MiB", 2147483648 -> "2.00 GiB"
std::string memory(int64_t bytes) {
  char text[32];
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib < 1024.0) {
    std::snprintf(text, sizeof(text), "%.1f MiB", mib);
  } else {
    std::snprintf(text, sizeof(text), "%.2f GiB", mib / 1024.0);
  }
  return text;
}

std::vector<std::string> compared_algorithms(const std::string& requested) {
  std::vector<std::string> algorithms{requested};
  for (const char* baseline : {"star", "dense"}) {
    if (requested != baseline) algorithms.emplace_back(baseline);
  }
  return algorithms;
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, PlanCommandOptions& options) {
  CLI::App* plan = app.add_subcommand("plan", "Phase 1 cost model: critical path, attention FLOPs, memory");
  CLI::Option* preset = plan->add_option("--preset", options.preset, "model shape: llama-3.1-8b, llama-3.1-70b");
  CLI::Option* config = plan->add_option("--config", options.model_config, "a Hugging Face config.json");
  preset->excludes(config);
  plan->add_option("--context", options.contexts, "context lengths in tokens (repeat or comma-separated)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{2147483647}));
  plan->add_option("--ranks", options.ranks, "ranks (hosts) B")->required()->check(CLI::Range(1, 1 << 20));
  plan->add_option("--kv-dtype", options.kv_dtype, "KV cache element type: f32, bf16, q8_0")
      ->capture_default_str()
      ->check(CLI::IsMember(kv_dtype_names()));
  add_attention_options(*plan, options.attention_flags, options.attention_config_file);
  return plan;
}

int run_plan_command(const CLI::App& command, const PlanCommandOptions& options) {
  if (options.preset.empty() == options.model_config.empty()) {
    std::cerr << "star-bench plan: give exactly one of --preset or --config\n";
    return 2;
  }
  Result<LlamaConfig> model = options.preset.empty() ? read_cost_model_config(options.model_config)
                                                     : cost_model_preset(options.preset);
  if (!model.ok()) {
    std::cerr << "star-bench plan: " << model.status().to_string() << "\n";
    return 2;
  }
  Result<AttentionConfig> attention =
      resolve_attention_options(command, options.attention_flags, options.attention_config_file);
  if (!attention.ok()) {
    std::cerr << "star-bench plan: " << attention.status().to_string() << "\n";
    return 2;
  }

  std::printf("model %s: %lld layers, %lld query heads, %lld KV heads, head_dim %lld; %d ranks; KV %s\n",
              options.preset.empty() ? options.model_config.c_str() : options.preset.c_str(),
              static_cast<long long>(model->n_layers), static_cast<long long>(model->n_heads),
              static_cast<long long>(model->n_kv_heads), static_cast<long long>(model->head_dim), options.ranks,
              options.kv_dtype.c_str());
  std::printf("%-10s %12s %15s %16s %18s %14s\n", "algorithm", "context", "critical path", "attn GFLOP/layer",
              "activations/layer", "KV cache/rank");
  for (const std::string& algorithm : compared_algorithms(attention->algorithm)) {
    AttentionConfig config = *attention;
    config.algorithm = algorithm;
    for (int64_t context : options.contexts) {
      Result<Phase1Cost> cost = phase1_cost(*model, context, options.ranks, config, *parse_kv_dtype(options.kv_dtype));
      if (!cost.ok()) {
        std::cerr << "star-bench plan: " << algorithm << " at L = " << context << ": "
                  << cost.status().to_string() << "\n";
        return 2;
      }
      std::printf("%-10s %12s %15s %16s %18s %14s\n", algorithm.c_str(), with_thousands(context).c_str(),
                  with_thousands(cost->critical_path_tokens).c_str(), gflops(cost->attention_flops_per_layer).c_str(),
                  memory(cost->activation_bytes_per_rank).c_str(), memory(cost->kv_bytes_per_rank).c_str());
    }
  }
  return 0;
}

}  // namespace star
