// RuntimeModel: a loaded Llama with its tokenizer, ready to serve. Every rank opens its own.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "star/common/status.h"
#include "star/model/llama_model.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

struct RuntimeModel {
  std::filesystem::path source;
  std::unique_ptr<LlamaModel> llama;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string chat_template;  // tokenizer_config.json's chat_template, or empty
};

// An HF directory (config.json, safetensors, tokenizer.json) or a .gguf file.
Result<RuntimeModel> open_model(const std::filesystem::path& path);

}  // namespace star
