#include "star/model/synthetic_gguf.h"

#include <array>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "star/model/gguf_writer.h"
#include "star/model/synthetic_tokenizer.h"
#include "star/quant/blocks.h"
#include "star/quant/dequantize.h"
#include "synthetic_weights.h"

namespace star {
namespace {

constexpr std::array<GgufFileType, 13> kFileTypes = {{
    {"f32", DType::kF32, false, 0},
    {"f16", DType::kF16, false, 1},
    {"bf16", DType::kBF16, false, 32},
    {"q8_0", DType::kQ8_0, false, 7},
    {"q4_0", DType::kQ4_0, false, 2},
    {"q4_1", DType::kQ4_1, false, 3},
    {"q5_0", DType::kQ5_0, false, 8},
    {"q5_1", DType::kQ5_1, false, 9},
    {"q4_k", DType::kQ4_K, false, 14},  // LLAMA_FTYPE_MOSTLY_Q4_K_S: the nearest llama.cpp name
    {"q5_k", DType::kQ5_K, false, 16},  // LLAMA_FTYPE_MOSTLY_Q5_K_S
    {"q6_k", DType::kQ6_K, false, 18},
    {"q4_k_m", DType::kQ4_K, true, 15},
    {"q5_k_m", DType::kQ5_K, true, 17},
}};

constexpr uint32_t kQuantizationVersion = 2;  // general.quantization_version of current ggml blocks

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int32_t kTokenNormal = 1;
constexpr int32_t kTokenControl = 3;
constexpr int32_t kTokenUnused = 5;

bool is_k_quant(DType dtype) { return dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ6_K; }

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third in between.
bool uses_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

int64_t layer_of(std::string_view gguf_name) {
  if (!gguf_name.starts_with("blk.")) return -1;
  return std::stoll(std::string(gguf_name.substr(4, gguf_name.find('.', 4) - 4)));
}

DType with_fallback(DType dtype, int64_t row_length) {
  if (is_k_quant(dtype) && row_length % quant::kSuperBlock != 0) {
    dtype = dtype == DType::kQ4_K ? DType::kQ5_0 : dtype == DType::kQ5_K ? DType::kQ5_1 : DType::kQ8_0;
  }
  if (dtype_row_bytes(dtype, row_length) < 0) dtype = DType::kF16;
  return dtype;
}

// convert_hf_to_gguf.py's permute: within each head, HF's halves [x0..x(d/2-1) | y0..] become
// interleaved pairs (x0, y0, x1, y1, ...), the layout llama.cpp's RoPE rotates.
std::vector<float> permute_for_adjacent_rope(const std::vector<float>& w, int64_t heads, int64_t cols) {
  const int64_t rows = static_cast<int64_t>(w.size()) / cols;
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t part = 0; part < 2; ++part) {
        const float* from = w.data() + (h * head_dim + part * half + i) * cols;
        std::copy(from, from + cols, out.data() + (h * head_dim + 2 * i + part) * cols);
      }
    }
  }
  return out;
}

// convert_hf_to_gguf.py's LlamaModel rope_freqs for llama3 scaling: one factor per frequency.
std::vector<float> llama3_rope_factors(const LlamaConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  const double low_wavelen = static_cast<double>(s.original_max_position_embeddings) / s.low_freq_factor;
  const double high_wavelen = static_cast<double>(s.original_max_position_embeddings) / s.high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back(static_cast<float>(s.factor));
    } else {
      const double smooth = (static_cast<double>(s.original_max_position_embeddings) / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      factors.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / s.factor + smooth)));
    }
  }
  return factors;
}

void add_hyperparameters(const LlamaConfig& c, const GgufFileType& file_type, GgufWriter& w) {
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", "star-mkmodel synthetic Llama");
  w.add_uint32("llama.block_count", static_cast<uint32_t>(c.n_layers));
  w.add_uint32("llama.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.add_uint32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  w.add_uint32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  w.add_uint32("llama.attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.add_uint32("llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.add_float32("llama.rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_float32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.add_uint32("llama.attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.add_uint32("llama.attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.add_uint32("general.file_type", file_type.llama_ftype);
  w.add_uint32("llama.vocab_size", static_cast<uint32_t>(c.vocab_size));
  w.add_uint32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  if (dtype_is_quantized(file_type.base)) w.add_uint32("general.quantization_version", kQuantizationVersion);
}

// What convert_hf_to_gguf.py takes from tokenizer.json: tokens by id (ids the tokenizer lacks up
// to the model's vocabulary become "[PAD<id>]", unused), added special tokens as control tokens,
// merges, and the special ids.
void add_tokenizer(const LlamaConfig& c, const SyntheticTokenizer& t, GgufWriter& w) {
  std::vector<std::string> tokens(static_cast<size_t>(c.vocab_size));
  std::vector<int32_t> types(tokens.size(), kTokenUnused);
  for (size_t id = 0; id < tokens.size(); ++id) tokens[id] = "[PAD" + std::to_string(id) + "]";
  for (const auto& [text, id] : t.tokenizer_json["model"]["vocab"].items()) {
    tokens[id.get<size_t>()] = text;
    types[id.get<size_t>()] = kTokenNormal;
  }
  for (const auto& added : t.tokenizer_json["added_tokens"]) {
    tokens[added["id"].get<size_t>()] = added["content"].get<std::string>();
    types[added["id"].get<size_t>()] = kTokenControl;
  }
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "llama-bpe");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", t.tokenizer_json["model"]["merges"].get<std::vector<std::string>>());
  w.add_uint32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(t.begin_of_text_id));
  w.add_uint32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(t.end_of_text_id));
  w.add_uint32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(t.eot_id));
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_string("tokenizer.chat_template", t.tokenizer_config["chat_template"].get<std::string>());
}

std::vector<float> stored_layout(const LlamaConfig& c, const SyntheticTensorPlan& t, std::vector<float> values) {
  if (t.gguf_name.ends_with(".attn_q.weight")) return permute_for_adjacent_rope(values, c.n_heads, c.dim);
  if (t.gguf_name.ends_with(".attn_k.weight")) return permute_for_adjacent_rope(values, c.n_kv_heads, c.dim);
  return values;
}

}  // namespace

std::span<const GgufFileType> gguf_file_types() { return kFileTypes; }

Result<GgufFileType> gguf_file_type(std::string_view name) {
  for (const GgufFileType& t : kFileTypes) {
    if (name == t.name) return t;
  }
  return invalid_argument("unknown GGUF file type '" + std::string(name) +
                          "' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m)");
}

DType gguf_tensor_type(const GgufFileType& file_type, std::string_view gguf_name, std::span<const int64_t> shape,
                       int64_t n_layers, bool has_output) {
  if (shape.size() < 2) return DType::kF32;
  const int64_t row_length = shape.back();
  DType dtype = file_type.base;
  if (!dtype_is_quantized(dtype)) return dtype;
  const bool is_output = gguf_name == "output.weight" || (!has_output && gguf_name == "token_embd.weight");
  if (is_output && dtype != DType::kQ8_0) {
    dtype = row_length % quant::kSuperBlock == 0 ? DType::kQ6_K : DType::kQ8_0;
  } else if (file_type.k_mix && (gguf_name.ends_with(".attn_v.weight") || gguf_name.ends_with(".ffn_down.weight")) &&
             uses_more_bits(layer_of(gguf_name), n_layers)) {
    dtype = DType::kQ6_K;
  }
  return with_fallback(dtype, row_length);
}

Status write_synthetic_gguf(const SyntheticModelSpec& spec, const GgufFileType& file_type,
                            const std::filesystem::path& out_file) {
  auto tokenizer = make_synthetic_tokenizer(spec.config.max_position_embeddings);
  if (!tokenizer.ok()) return tokenizer.status();
  auto config = synthetic_model_config(spec);
  if (!config.ok()) return config.status();
  const LlamaConfig& c = *config;

  GgufWriter writer;
  add_hyperparameters(c, file_type, writer);
  add_tokenizer(c, *tokenizer, writer);
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    const std::vector<float> factors = llama3_rope_factors(c);
    const int64_t count = static_cast<int64_t>(factors.size());
    if (Status s = writer.add_tensor("rope_freqs.weight", {count}, DType::kF32,
                                     quant::quantize_rows(DType::kF32, factors.data(), 1, count));
        !s.ok()) {
      return s;
    }
  }
  const std::vector<SyntheticTensorPlan> plan = plan_synthetic_tensors(c);
  for (const SyntheticTensorPlan& t : plan) {
    const DType dtype = gguf_tensor_type(file_type, t.gguf_name, t.shape, c.n_layers, !c.tie_word_embeddings);
    const std::vector<float> values = stored_layout(c, t, synthetic_tensor_values(spec.seed, t));
    const int64_t k = t.shape.back();
    const int64_t rows = static_cast<int64_t>(values.size()) / k;
    if (Status s = writer.add_tensor(t.gguf_name, t.shape, dtype, quant::quantize_rows(dtype, values.data(), rows, k));
        !s.ok()) {
      return s;
    }
  }
  return writer.write(out_file);
}

}  // namespace star
