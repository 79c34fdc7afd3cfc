#include <cstring>

#include "llama_tensor_table.h"
#include "model_loaders.h"
#include "star/model/config_validation.h"
#include "star/model/gguf.h"
#include "star/model/gguf_vocabulary.h"
#include "weight_conversion.h"

namespace star {
namespace {

// A required key: absent is a malformed model (kInvalidArgument), like a missing config.json key.
template <typename T>
Result<T> required(const GgufFile& gguf, const Result<T>& value, std::string_view key) {
  if (value.ok() || value.status().code() != StatusCode::kNotFound) return value;
  return invalid_argument(gguf.path().string() + ": missing required metadata key '" + std::string(key) + "'");
}

Result<int64_t> required_int(const GgufFile& gguf, std::string_view key) {
  return required(gguf, gguf.get_int(key), key);
}

Result<int64_t> optional_int(const GgufFile& gguf, std::string_view key, int64_t fallback) {
  return gguf.has(key) ? gguf.get_int(key) : Result<int64_t>(fallback);
}

Status check_architecture(const GgufFile& gguf) {
  auto arch = required(gguf, gguf.get_string("general.architecture"), "general.architecture");
  if (!arch.ok()) return arch.status();
  if (*arch != "llama") return invalid_argument(gguf.path().string() + ": architecture " + *arch + " is not Llama");
  return ok_status();
}

Status read_rope_scaling(const GgufFile& gguf, LlamaConfig& c) {
  const std::string where = gguf.path().string();
  if (gguf.has("llama.rope.scaling.type")) {
    auto type = gguf.get_string("llama.rope.scaling.type");
    if (!type.ok()) return type.status();
    if (*type != "none") {
      return unimplemented(where + ": llama.rope.scaling.type '" + *type + "' is not supported");
    }
  }
  c.rope_scaling = RopeScaling{};
  // llama.cpp stores Llama 3.1/3.2 rope scaling as precomputed per-frequency factors, not parameters.
  if (!gguf.contains_tensor("rope_freqs.weight")) return ok_status();
  auto freqs = gguf.find_tensor("rope_freqs.weight");
  if (!freqs.ok()) return freqs.status();
  const std::vector<int64_t> expected = {c.head_dim / 2};
  if (freqs->dtype != DType::kF32 || freqs->shape != expected) {
    return invalid_argument(where + ": tensor 'rope_freqs.weight' is " + dtype_name(freqs->dtype) + " " +
                            shape_to_string(freqs->shape) + ", expected F32 " + shape_to_string(expected) +
                            " (one factor per rotary frequency)");
  }
  c.rope_scaling.type = RopeScaling::Type::kFreqFactors;
  c.rope_scaling.freq_factors.resize(static_cast<size_t>(expected[0]));
  std::memcpy(c.rope_scaling.freq_factors.data(), freqs->data, freqs->bytes);
  return ok_status();
}

Result<LlamaConfig> read_config(const GgufFile& gguf) {
  const std::string where = gguf.path().string();
  LlamaConfig c;
  c.rope_layout = RopeLayout::kAdjacent;
  struct IntKey {
    const char* key;
    int64_t* target;
  };
  const IntKey keys[] = {{"llama.embedding_length", &c.dim},
                         {"llama.feed_forward_length", &c.hidden_dim},
                         {"llama.block_count", &c.n_layers},
                         {"llama.attention.head_count", &c.n_heads},
                         {"llama.context_length", &c.max_position_embeddings}};
  for (const IntKey& k : keys) {
    auto v = required_int(gguf, k.key);
    if (!v.ok()) return v.status();
    *k.target = *v;
  }
  if (c.n_heads <= 0) return invalid_argument(where + ": llama.attention.head_count must be > 0");
  auto kv_heads = optional_int(gguf, "llama.attention.head_count_kv", c.n_heads);
  if (!kv_heads.ok()) return kv_heads.status();
  c.n_kv_heads = *kv_heads;

  auto rope_dims = optional_int(gguf, "llama.rope.dimension_count", c.dim / c.n_heads);
  if (!rope_dims.ok()) return rope_dims.status();
  auto head_dim = optional_int(gguf, "llama.attention.key_length", *rope_dims);
  if (!head_dim.ok()) return head_dim.status();
  c.head_dim = *head_dim;
  if (*rope_dims != c.head_dim) {
    return unimplemented(where + ": llama.rope.dimension_count " + std::to_string(*rope_dims) +
                         " differs from the head dimension " + std::to_string(c.head_dim) + " (partial rotary)");
  }

  auto eps = required(gguf, gguf.get_float("llama.attention.layer_norm_rms_epsilon"),
                      "llama.attention.layer_norm_rms_epsilon");
  if (!eps.ok()) return eps.status();
  c.rms_norm_eps = *eps;
  if (gguf.has("llama.rope.freq_base")) {
    auto theta = gguf.get_float("llama.rope.freq_base");
    if (!theta.ok()) return theta.status();
    c.rope_theta = *theta;
  }
  if (Status s = read_rope_scaling(gguf, c); !s.ok()) return s;
  return c;
}

Status load_tensor(const GgufFile& gguf, const std::string& name, const std::vector<int64_t>& shape, WeightTensor& out) {
  auto view = gguf.find_tensor(name);
  if (!view.ok()) return view.status();
  return to_weight_tensor(*view, shape, out);
}

// llama.cpp's converter writes `output` even when it is a copy of the embedding; a byte-identical
// copy is a tied model, and lm_head then shares the embedding's storage.
bool output_is_embedding_copy(const GgufFile& gguf) {
  auto output = gguf.find_tensor("output.weight");
  auto embed = gguf.find_tensor("token_embd.weight");
  return output.ok() && embed.ok() && output->dtype == embed->dtype && output->shape == embed->shape &&
         std::memcmp(output->data, embed->data, output->bytes) == 0;
}

Status load_gguf_weights(const GgufFile& gguf, const LlamaConfig& c, LlamaWeights& w) {
  if (Status s = load_tensor(gguf, "token_embd.weight", {c.vocab_size, c.dim}, w.embed); !s.ok()) return s;
  // Layer by layer: a layer count the file's tensors do not back fails at the first missing
  // tensor, before a lying header's count of layers is ever allocated.
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    LlamaLayerWeights weights;
    for (const LayerTensorSpec& spec : llama_layer_tensors()) {
      if (Status s = load_tensor(gguf, gguf_layer_tensor_name(layer, spec), spec.shape(c), weights.*spec.member); !s.ok()) return s;
    }
    w.layers.push_back(std::move(weights));
  }
  if (Status s = load_tensor(gguf, "output_norm.weight", {c.dim}, w.final_norm); !s.ok()) return s;
  if (c.tie_word_embeddings) {
    w.lm_head = borrow_tensor(w.embed);
    return ok_status();
  }
  return load_tensor(gguf, "output.weight", {c.vocab_size, c.dim}, w.lm_head);
}

}  // namespace

Result<LoadedModel> load_gguf_model(const std::filesystem::path& gguf_path) {
  auto gguf = GgufFile::open(gguf_path);
  if (!gguf.ok()) return gguf.status();
  if (Status s = check_architecture(*gguf); !s.ok()) return s;

  LoadedModel model;
  model.source = gguf_path;
  auto config = read_config(*gguf);
  if (!config.ok()) return config.status();
  auto vocabulary = read_gguf_vocabulary(*gguf);
  if (!vocabulary.ok()) return vocabulary.status();
  model.config = std::move(config).value();
  LlamaConfig& c = model.config;

  auto vocab_size = optional_int(*gguf, "llama.vocab_size", static_cast<int64_t>(vocabulary->tokens.size()));
  if (!vocab_size.ok()) return vocab_size.status();
  c.vocab_size = *vocab_size;
  c.bos_token_id = vocabulary->bos_id;
  if (vocabulary->eos_id >= 0) c.eos_token_ids.push_back(vocabulary->eos_id);
  if (vocabulary->eot_id >= 0 && vocabulary->eot_id != vocabulary->eos_id) c.eos_token_ids.push_back(vocabulary->eot_id);
  c.tie_word_embeddings = !gguf->contains_tensor("output.weight") || output_is_embedding_copy(*gguf);
  if (Status s = validate_llama_config(c, gguf_path.string()); !s.ok()) return s;

  if (Status s = load_gguf_weights(*gguf, c, model.weights); !s.ok()) return s;
  model.gguf_vocabulary = std::move(vocabulary).value();
  return model;
}

}  // namespace star
