#include "star/eval/eval_variants.h"

#include <algorithm>
#include <fstream>

#include "star/attention/attention_config_io.h"

namespace star::eval {

Result<std::vector<EvalVariant>> eval_variants_from_json(const nlohmann::json& json,
                                                         const std::vector<std::string>& taken) {
  if (!json.is_object()) {
    return invalid_argument(std::string("variants must be a JSON object of name: attention config, got ") +
                            json.type_name());
  }
  std::vector<EvalVariant> variants;
  // nlohmann::json keeps an object's keys sorted: the columns follow the names, whatever the file's order.
  for (const auto& [name, value] : json.items()) {
    if (name.empty() || name.find('/') != std::string::npos) {
      return invalid_argument("variant \"" + name + "\": a name must be non-empty and without '/' (it names files)");
    }
    if (std::find(taken.begin(), taken.end(), name) != taken.end()) {
      return invalid_argument("variant \"" + name + "\": the name is already an algorithm of this run");
    }
    Result<AttentionConfig> config = attention_config_from_json(value);
    if (!config.ok()) return invalid_argument("variant \"" + name + "\": " + std::string(config.status().message()));
    variants.push_back({name, *config});
  }
  return variants;
}

Result<std::vector<EvalVariant>> load_eval_variants(const std::filesystem::path& path,
                                                    const std::vector<std::string>& taken) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open variants file " + path.string());
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("variants file " + path.string() + ": " + e.what());
  }
  Result<std::vector<EvalVariant>> variants = eval_variants_from_json(json, taken);
  if (!variants.ok()) return Status(variants.status().code(), path.string() + ": " + variants.status().message());
  return variants;
}

}  // namespace star::eval
