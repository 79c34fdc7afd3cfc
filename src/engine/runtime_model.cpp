#include "star/engine/runtime_model.h"

#include <algorithm>

#include "star/engine/cpu_engine_model.h"
#include "star/model/model_loader.h"
#include "star/tokenizer/sentencepiece_tokenizer.h"
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
  Result<std::unique_ptr<Tokenizer>> tokenizer = [&]() -> Result<std::unique_ptr<Tokenizer>> {
    if (loaded->gguf_vocabulary) {
      GgufVocabulary& v = *loaded->gguf_vocabulary;
      if (v.model != "llama") {
        return unimplemented(path.string() + ": GGUF tokenizer model '" + v.model +
                             "' is not supported (only 'llama', SentencePiece-style BPE)");
      }
      return make_sentencepiece_tokenizer(std::move(v.tokens), std::move(v.scores), std::move(v.token_types),
                                          v.bos_id, v.eos_id, v.add_space_prefix);
    }
    if (loaded->tokenizer_json.empty()) {
      return not_found(path.string() + ": no tokenizer.json beside the model");
    }
    return load_tokenizer_json(loaded->tokenizer_json, loaded->tokenizer_config);
  }();
  if (!tokenizer.ok()) return tokenizer.status();
  out.tokenizer = std::move(*tokenizer);
  if (loaded->tokenizer_config.is_object() && loaded->tokenizer_config.contains("chat_template") &&
      loaded->tokenizer_config["chat_template"].is_string()) {
    out.chat_template = loaded->tokenizer_config["chat_template"].get<std::string>();
  }
  LlamaConfig config = loaded->config;
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
