#include "star/engine/runtime_model.h"

#include <algorithm>

#include "star/engine/cpu_engine_model.h"
#include "star/model/model_loader.h"
#include "star/tokenizer/gguf_tokenizer.h"
#include "star/tokenizer/sentence_ends.h"
#include "star/tokenizer/tokenizer_json.h"

namespace star {

Result<RuntimeModel> open_model(const std::filesystem::path& path, KvDType kv_dtype) {
  Result<LoadedModel> loaded = load_model(path);
  if (!loaded.ok()) return loaded.status();
  if (Status s = check_kv_dtype(kv_dtype, loaded->config.head_dim); !s.ok()) {
    return Status(s.code(), path.string() + ": " + s.message());
  }
  RuntimeModel out;
  out.source = path;
  if (loaded->gguf_vocabulary) out.chat_template = loaded->gguf_vocabulary->chat_template;
  Result<std::unique_ptr<Tokenizer>> tokenizer = [&]() -> Result<std::unique_ptr<Tokenizer>> {
    if (loaded->gguf_vocabulary) return make_gguf_tokenizer(std::move(*loaded->gguf_vocabulary), path.string());
    if (loaded->tokenizer_json.empty()) {
      return not_found(path.string() + ": no tokenizer.json beside the model");
    }
    return load_tokenizer_json(loaded->tokenizer_json, loaded->tokenizer_config);
  }();
  if (!tokenizer.ok()) return tokenizer.status();
  out.tokenizer = std::move(*tokenizer);
  out.sentence_ends = sentence_end_tokens(*out.tokenizer);
  if (loaded->tokenizer_config.is_object() && loaded->tokenizer_config.contains("chat_template") &&
      loaded->tokenizer_config["chat_template"].is_string()) {
    out.chat_template = loaded->tokenizer_config["chat_template"].get<std::string>();
  }
  LlamaConfig config = loaded->config;
  // A GGUF vocabulary may name a BOS it never adds (SmolLM2's <|im_start|>, add_bos_token false);
  // prompts then start without one, and that id is no BOS to strip or count.
  if (loaded->gguf_vocabulary) config.bos_token_id = out.tokenizer->bos_id();
  // Stop ids: the tokenizer's end-of-text / end-of-turn tokens join the model's eos ids.
  for (int32_t id : out.tokenizer->eos_ids()) {
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(id);
    }
  }
  Result<LlamaModel> llama = LlamaModel::create(std::move(config), std::move(loaded->weights));
  if (!llama.ok()) return Status(llama.status().code(), path.string() + ": " + llama.status().message());
  out.llama = std::make_unique<LlamaModel>(std::move(*llama));
  out.engine = std::make_unique<CpuEngineModel>(*out.llama, kv_dtype);
  return out;
}

}  // namespace star
