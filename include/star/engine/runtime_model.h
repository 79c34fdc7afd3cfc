// RuntimeModel: a loaded Llama with its tokenizer, ready to serve. Every rank opens its own.
// The engine runs on `engine`: the CPU backend over `llama` as opened, or another backend that
// replaces it (star/backend/backend_selection.h); `llama` stays for its configuration and
// host weights.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "star/common/status.h"
#include "star/engine/engine_model.h"
#include "star/model/kv_dtype.h"
#include "star/model/llama_model.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

struct RuntimeModel {
  std::filesystem::path source;
  std::unique_ptr<LlamaModel> llama;
  std::unique_ptr<EngineModel> engine;  // declared after llama: it may refer to it
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<uint8_t> sentence_ends;  // per token id, for boundary_snap (tokenizer/sentence_ends.h)
  std::string chat_template;  // tokenizer_config.json's chat_template or GGUF's tokenizer.chat_template, or empty
};

// An HF directory (config.json, safetensors, tokenizer.json) or a .gguf file. The CPU engine's KV
// shards store K and V as `kv_dtype` (--kv-dtype), refused here when the model's head_dim cannot
// be stored that way.
Result<RuntimeModel> open_model(const std::filesystem::path& path, KvDType kv_dtype = KvDType::kF32);

}  // namespace star
