// star-mkmodel: writes a synthetic Llama model (random weights, a small trained byte-level BPE
// tokenizer) as an HF directory that starserve and transformers both load.
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "star/model/synthetic_model.h"

namespace {

struct Overrides {
  std::optional<int64_t> layers, dim, heads, kv_heads, head_dim, hidden, vocab, max_positions;
  std::optional<double> rope_theta;
  std::optional<std::string> rope_scaling;
  std::optional<bool> tie;
};

std::string presets_help() {
  std::string text = "Presets:\n";
  for (const star::SyntheticPreset& p : star::synthetic_presets()) {
    text += "  " + std::string(p.name) + ": " + p.description + "\n";
  }
  text +=
      "\nFiles written: config.json, generation_config.json, model.safetensors, tokenizer.json,\n"
      "tokenizer_config.json. The same seed and options give byte-identical files.\n"
      "transformers 4.44 needs head_dim = dim / heads; other head dims load in starserve only.";
  return text;
}

void apply(const Overrides& o, star::LlamaConfig& c) {
  if (o.layers) c.n_layers = *o.layers;
  if (o.dim) c.dim = *o.dim;
  if (o.heads) c.n_heads = *o.heads;
  if (o.kv_heads) c.n_kv_heads = *o.kv_heads;
  if (o.dim || o.heads) c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  if (o.head_dim) c.head_dim = *o.head_dim;
  if (o.hidden) c.hidden_dim = *o.hidden;
  if (o.vocab) c.vocab_size = *o.vocab;
  if (o.max_positions) c.max_position_embeddings = *o.max_positions;
  if (o.rope_theta) c.rope_theta = *o.rope_theta;
  if (o.rope_scaling == "none") c.rope_scaling = star::RopeScaling{};
  if (o.rope_scaling == "llama3" && c.rope_scaling.type != star::RopeScaling::Type::kLlama3) {
    c.rope_scaling.type = star::RopeScaling::Type::kLlama3;
    c.rope_scaling.factor = 8.0;  // Llama 3.1's parameters
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 8192;
  }
  if (o.tie) c.tie_word_embeddings = *o.tie;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a synthetic Llama model (random weights, byte-level BPE tokenizer) in HF layout."};
  app.footer(presets_help());
  std::string out_dir;
  std::string preset = "tiny";
  uint64_t seed = 0;
  std::string dtype = "f32";
  Overrides o;
  app.add_option("--out", out_dir, "output directory (created if needed)")->required();
  app.add_option("--preset", preset, "tiny | small | long (see below)")->check(CLI::IsMember({"tiny", "small", "long"}));
  app.add_option("--seed", seed, "random seed for the weights");
  app.add_option("--dtype", dtype, "stored dtype: f32 | bf16 | f16")->check(CLI::IsMember({"f32", "bf16", "f16"}));
  app.add_option("--layers", o.layers, "number of layers");
  app.add_option("--dim", o.dim, "hidden size");
  app.add_option("--heads", o.heads, "query heads");
  app.add_option("--kv-heads", o.kv_heads, "key/value heads (must divide --heads)");
  app.add_option("--head-dim", o.head_dim, "head dimension (default dim / heads)");
  app.add_option("--hidden", o.hidden, "FFN (SwiGLU) width");
  app.add_option("--vocab", o.vocab, "vocabulary size (raised to the tokenizer size when smaller)");
  app.add_option("--max-positions", o.max_positions, "max_position_embeddings");
  app.add_option("--rope-theta", o.rope_theta, "RoPE base");
  app.add_option("--rope-scaling", o.rope_scaling, "none | llama3 (llama3 default: factor 8, original 8192)")
      ->check(CLI::IsMember({"none", "llama3"}));
  auto* tie = app.add_flag_callback("--tie", [&o] { o.tie = true; }, "tie lm_head to the embedding");
  auto* no_tie = app.add_flag_callback("--no-tie", [&o] { o.tie = false; }, "separate lm_head");
  tie->excludes(no_tie);
  CLI11_PARSE(app, argc, argv);

  auto config = star::synthetic_preset(preset);
  if (!config.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", config.status().to_string().c_str());
    return 2;
  }
  star::SyntheticModelSpec spec;
  spec.config = *config;
  apply(o, spec.config);
  spec.seed = seed;
  spec.dtype = dtype == "bf16" ? star::DType::kBF16 : dtype == "f16" ? star::DType::kF16 : star::DType::kF32;

  auto written = star::synthetic_model_config(spec);
  if (!written.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", written.status().to_string().c_str());
    return 1;
  }
  if (star::Status s = star::write_synthetic_model(spec, out_dir); !s.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("wrote %s: preset %s, seed %llu, %s, %lld parameters, vocab %lld\n", out_dir.c_str(), preset.c_str(),
              static_cast<unsigned long long>(seed), star::dtype_name(spec.dtype),
              static_cast<long long>(written->parameter_count()), static_cast<long long>(written->vocab_size));
  return 0;
}
