#include "json_file.h"
#include "llama_tensor_table.h"
#include "model_loaders.h"
#include "star/model/hf_config.h"
#include "star/model/safetensors.h"
#include "weight_conversion.h"

namespace star {
namespace {

Status load_tensor(const SafetensorsCheckpoint& checkpoint, const std::string& name,
                   const std::vector<int64_t>& shape, WeightTensor& out) {
  auto view = checkpoint.find(name);
  if (!view.ok()) return view.status();
  return to_weight_tensor(*view, shape, out);
}

Status load_hf_weights(const SafetensorsCheckpoint& checkpoint, const LlamaConfig& c, LlamaWeights& w) {
  if (Status s = load_tensor(checkpoint, "model.embed_tokens.weight", {c.vocab_size, c.dim}, w.embed); !s.ok()) return s;
  // Layer by layer: a layer count the file's tensors do not back fails at the first missing
  // tensor, before a lying header's count of layers is ever allocated.
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    LlamaLayerWeights weights;
    for (const LayerTensorSpec& spec : llama_layer_tensors()) {
      if (Status s = load_tensor(checkpoint, hf_layer_tensor_name(layer, spec), spec.shape(c), weights.*spec.member); !s.ok()) return s;
    }
    w.layers.push_back(std::move(weights));
  }
  if (Status s = load_tensor(checkpoint, "model.norm.weight", {c.dim}, w.final_norm); !s.ok()) return s;
  if (c.tie_word_embeddings) {
    w.lm_head = borrow_tensor(w.embed);
    return ok_status();
  }
  if (!checkpoint.contains("lm_head.weight")) {
    return not_found(checkpoint.source().string() +
                     ": tensor 'lm_head.weight' is missing and tie_word_embeddings is false");
  }
  return load_tensor(checkpoint, "lm_head.weight", {c.vocab_size, c.dim}, w.lm_head);
}

}  // namespace

Result<LoadedModel> load_hf_model(const std::filesystem::path& model_dir) {
  LoadedModel model;
  model.source = model_dir;
  auto config = load_hf_config(model_dir);
  if (!config.ok()) return config.status();
  model.config = std::move(config).value();

  auto checkpoint = SafetensorsCheckpoint::open(model_dir);
  if (!checkpoint.ok()) return checkpoint.status();
  if (Status s = load_hf_weights(*checkpoint, model.config, model.weights); !s.ok()) return s;

  std::error_code ec;
  if (std::filesystem::is_regular_file(model_dir / "tokenizer.json", ec)) model.tokenizer_json = model_dir / "tokenizer.json";
  const std::filesystem::path tokenizer_config = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(tokenizer_config, ec)) {
    auto json = read_json_file(tokenizer_config);
    if (!json.ok()) return json.status();
    model.tokenizer_config = std::move(json).value();
  }
  return model;
}

}  // namespace star
