// RuntimeModel: a loaded Llama with its tokenizer, ready to serve. Every rank opens its own.
// The engine runs on `engine`: the CPU backend over `llama` as opened, or another backend that
// replaces it (star/backend/backend_selection.h); `llama` stays for its configuration and
// host weights.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "star/common/status.h"
#include "star/engine/engine_model.h"
#include "star/model/llama_model.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

struct RuntimeModel {
  std::filesystem::path source;
  std::unique_ptr<LlamaModel> llama;
  std::unique_ptr<EngineModel> engine;  // declared after llama: it may refer to it
  std::unique_ptr<Tokenizer> tokenizer;
  std::string chat_template;  // tokenizer_config.json's chat_template or GGUF's tokenizer.chat_template, or empty
};

// An HF directory (config.json, safetensors, tokenizer.json) or a .gguf file.
Result<RuntimeModel> open_model(const std::filesystem::path& path);

}  // namespace star
