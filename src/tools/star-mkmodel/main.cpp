// star-mkmodel: writes a synthetic Llama model (random weights, a small trained byte-level BPE
// tokenizer) as an HF directory that starserve and transformers both load, or as one GGUF file in
// any of the stored types llama.cpp writes.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "star/model/synthetic_gguf.h"
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
      "\n--format hf (default) writes into the directory --out: config.json, generation_config.json,\n"
      "model.safetensors, tokenizer.json, tokenizer_config.json; --dtype f32 | f16 | bf16.\n"
      "transformers 4.44 needs head_dim = dim / heads; other head dims load in starserve only.\n"
      "\n--format gguf writes the file --out as llama.cpp's converter and llama-quantize would: the\n"
      "same weights (same seed), Q/K rows in llama.cpp's adjacent-pair RoPE order, the tokenizer as\n"
      "tokenizer.ggml.* (gpt2 / llama-bpe), rope_freqs.weight for llama3 rope scaling. --dtype:\n"
      "  f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k   every matrix in that type\n"
      "  q4_k_m q5_k_m   Q4_K / Q5_K, with attn_v and ffn_down of layer i in Q6_K when i < n/8,\n"
      "                  i >= 7n/8 or (i - n/8) % 3 == 2 (llama.cpp's use_more_bits)\n"
      "Rules as in llama.cpp: norms and rope_freqs stay F32; in a quantized file the output matrix\n"
      "(token_embd when tied) is Q6_K (Q8_0 in q8_0 files, or when its rows are not a multiple of\n"
      "256); a K-quant matrix whose rows are not a multiple of 256 falls back Q4_K -> Q5_0,\n"
      "Q5_K -> Q5_1, Q6_K -> Q8_0; a block type whose rows are not a multiple of 32 -> F16.\n"
      "\nThe same seed and options give byte-identical files.";
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
  std::string format = "hf";
  Overrides o;
  app.add_option("--out", out_dir, "output directory (hf, created if needed) or file (gguf)")->required();
  app.add_option("--format", format, "hf | gguf")->check(CLI::IsMember({"hf", "gguf"}));
  app.add_option("--preset", preset, "tiny | small | long (see below)")->check(CLI::IsMember({"tiny", "small", "long"}));
  app.add_option("--seed", seed, "random seed for the weights");
  std::vector<std::string> dtype_names;
  for (const star::GgufFileType& t : star::gguf_file_types()) dtype_names.push_back(t.name);
  app.add_option("--dtype", dtype, "stored dtype: f32 | f16 | bf16 (hf and gguf); q8_0 ... q5_k_m (gguf, see below)")
      ->check(CLI::IsMember(dtype_names));
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
  auto file_type = star::gguf_file_type(dtype);
  if (!file_type.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", file_type.status().to_string().c_str());
    return 2;
  }
  if (format == "hf" && star::dtype_is_quantized(file_type->base)) {
    std::fprintf(stderr, "star-mkmodel: --dtype %s needs --format gguf (HF checkpoints hold f32, f16 or bf16)\n",
                 dtype.c_str());
    return 2;
  }
  spec.dtype = file_type->base;

  auto written = star::synthetic_model_config(spec);
  if (!written.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", written.status().to_string().c_str());
    return 1;
  }
  const star::Status s = format == "gguf" ? star::write_synthetic_gguf(spec, *file_type, out_dir)
                                          : star::write_synthetic_model(spec, out_dir);
  if (!s.ok()) {
    std::fprintf(stderr, "star-mkmodel: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("wrote %s: preset %s, seed %llu, %s %s, %lld parameters, vocab %lld\n", out_dir.c_str(), preset.c_str(),
              static_cast<unsigned long long>(seed), format.c_str(), file_type->name,
              static_cast<long long>(written->parameter_count()), static_cast<long long>(written->vocab_size));
  return 0;
}
