#include "star/tokenizer/tokenizer_json.h"

#include <fstream>
#include <sstream>

#include "tokenizer_json_parts.h"

namespace star {
namespace {

Result<std::unique_ptr<Tokenizer>> load_parsed(const nlohmann::json& root, const nlohmann::json& config) {
  if (!root.is_object()) return invalid_argument("top level is not a JSON object");
  if (!config.is_null() && !config.is_object()) {
    return invalid_argument("tokenizer_config is neither null nor a JSON object");
  }
  auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return invalid_argument("missing \"model\" object");
  const std::string type = model->value("type", "");
  if (type != "BPE") {
    return unimplemented("model type \"" + type + "\" is not supported (only \"BPE\")");
  }
  if (model->value("byte_fallback", false)) return tokenizer_json::make_llama2_sentencepiece(root, config);
  return tokenizer_json::make_byte_level_bpe(root, config);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer_json(const std::filesystem::path& tokenizer_json,
                                                       const nlohmann::json& tokenizer_config) {
  const std::string name = tokenizer_json.string();
  std::ifstream file(tokenizer_json, std::ios::binary);
  if (!file) return not_found(name + ": cannot open");
  std::stringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return data_loss(name + ": read failed");
  try {
    const nlohmann::json root = nlohmann::json::parse(contents.str());
    auto tokenizer = load_parsed(root, tokenizer_config);
    if (!tokenizer.ok()) {
      return Status(tokenizer.status().code(), name + ": " + tokenizer.status().message());
    }
    return tokenizer;
  } catch (const nlohmann::json::exception& e) {
    // Bad JSON, or a field of the wrong type deep inside.
    return invalid_argument(name + ": " + e.what());
  }
}

}  // namespace star
