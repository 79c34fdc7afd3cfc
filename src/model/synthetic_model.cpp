#include "star/model/synthetic_model.h"

#include <string>
#include <vector>

#include "json_file.h"
#include "star/model/config_validation.h"
#include "star/model/hf_config.h"
#include "star/model/safetensors.h"
#include "star/model/synthetic_tokenizer.h"
#include "synthetic_weights.h"

namespace star {
namespace {

Status write_generation_config(const LlamaConfig& c, const std::filesystem::path& path) {
  nlohmann::ordered_json j;
  j["bos_token_id"] = c.bos_token_id;
  j["eos_token_id"] = c.eos_token_ids;
  j["transformers_version"] = "4.44.2";
  return write_json_file(path, j);
}

Result<LlamaConfig> config_with_tokenizer(const SyntheticModelSpec& spec, const SyntheticTokenizer& tokenizer) {
  LlamaConfig c = spec.config;
  if (c.rope_layout != RopeLayout::kHalf) return invalid_argument("synthetic models are HF checkpoints: rope_layout must be kHalf");
  c.vocab_size = std::max<int64_t>(c.vocab_size, tokenizer.size);
  c.bos_token_id = tokenizer.begin_of_text_id;
  c.eos_token_ids = {tokenizer.end_of_text_id, tokenizer.eot_id};
  if (Status s = validate_llama_config(c, "synthetic model config"); !s.ok()) return s;
  return c;
}

}  // namespace

Result<LlamaConfig> synthetic_model_config(const SyntheticModelSpec& spec) {
  auto tokenizer = make_synthetic_tokenizer(spec.config.max_position_embeddings);
  if (!tokenizer.ok()) return tokenizer.status();
  return config_with_tokenizer(spec, *tokenizer);
}

Status write_synthetic_model(const SyntheticModelSpec& spec, const std::filesystem::path& out_dir) {
  auto tokenizer = make_synthetic_tokenizer(spec.config.max_position_embeddings);
  if (!tokenizer.ok()) return tokenizer.status();
  auto config = config_with_tokenizer(spec, *tokenizer);
  if (!config.ok()) return config.status();

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return unavailable(out_dir.string() + ": cannot create directory: " + ec.message());

  const std::vector<SyntheticTensorPlan> plan = plan_synthetic_tensors(*config);
  std::vector<std::vector<std::byte>> storage;
  std::vector<SafetensorsTensor> tensors;
  storage.reserve(plan.size());
  for (const SyntheticTensorPlan& t : plan) {
    storage.push_back(encode_from_f32(synthetic_tensor_values(spec.seed, t), spec.dtype));
    tensors.push_back({t.hf_name, spec.dtype, t.shape, storage.back()});
  }
  if (Status s = write_safetensors(out_dir / "model.safetensors", tensors); !s.ok()) return s;
  if (Status s = write_json_file(out_dir / "config.json", hf_config_json(*config, spec.dtype)); !s.ok()) return s;
  if (Status s = write_generation_config(*config, out_dir / "generation_config.json"); !s.ok()) return s;
  if (Status s = write_json_file(out_dir / "tokenizer.json", tokenizer->tokenizer_json); !s.ok()) return s;
  return write_json_file(out_dir / "tokenizer_config.json", tokenizer->tokenizer_config);
}

}  // namespace star
