#include "tokenizer_json_parts.h"

#include <algorithm>

#include "special_token_names.h"

namespace star::tokenizer_json {
namespace {

using nlohmann::json;

bool valid_id(const json& v) {
  return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < kMaxTokenId;
}

std::optional<int32_t> lookup(std::string_view piece, const std::vector<AddedToken>& added,
                              const StringMap<int32_t>& vocab) {
  for (const auto& t : added) {
    if (t.content == piece) return t.id;
  }
  if (auto it = vocab.find(piece); it != vocab.end()) return it->second;
  return std::nullopt;
}

// tokenizer_config writes a token as "text" or as an AddedToken object {"content": "text", ...}.
Result<std::optional<std::string>> config_token(const json& config, const char* key) {
  if (!config.is_object() || !config.contains(key) || config[key].is_null()) {
    return std::optional<std::string>();
  }
  const json& v = config[key];
  if (v.is_string()) return std::optional<std::string>(v.get<std::string>());
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return std::optional<std::string>(v["content"].get<std::string>());
  }
  return invalid_argument(std::string("tokenizer_config ") + key + " is neither a string nor {\"content\": ...}");
}

Result<int32_t> config_token_id(const json& config, const char* key, const std::vector<AddedToken>& added,
                                const StringMap<int32_t>& vocab) {
  auto text = config_token(config, key);
  if (!text.ok()) return text.status();
  if (!text.value()) return -1;
  auto id = lookup(**text, added, vocab);
  if (!id) {
    return invalid_argument(std::string("tokenizer_config ") + key + " \"" + **text +
                            "\" is not a token of this vocabulary");
  }
  return *id;
}

// The first special token of the single-sequence template, in a TemplateProcessing (possibly
// inside a Sequence of processors).
std::optional<int32_t> template_bos(const json& processor) {
  if (!processor.is_object()) return std::nullopt;
  const std::string type = processor.value("type", "");
  if (type == "Sequence" && processor.contains("processors")) {
    for (const json& p : processor["processors"]) {
      if (auto id = template_bos(p)) return id;
    }
    return std::nullopt;
  }
  if (type != "TemplateProcessing") return std::nullopt;
  const json& single = processor.value("single", json::array());
  if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return std::nullopt;
  const std::string name = single[0]["SpecialToken"].value("id", "");
  const json& specials = processor.value("special_tokens", json::object());
  if (!specials.contains(name)) return std::nullopt;
  const json& ids = specials[name].value("ids", json::array());
  if (!ids.is_array() || ids.size() != 1 || !valid_id(ids[0])) return std::nullopt;
  return ids[0].get<int32_t>();
}

}  // namespace

Result<std::vector<AddedToken>> parse_added_tokens(const json& root) {
  std::vector<AddedToken> tokens;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return tokens;
  const json& list = root["added_tokens"];
  if (!list.is_array()) return invalid_argument("\"added_tokens\" is not an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string()) {
      return invalid_argument(where + " has no \"content\" string");
    }
    if (!t.contains("id") || !valid_id(t["id"])) return invalid_argument(where + " has no valid \"id\"");
    tokens.push_back({t["content"].get<std::string>(), t["id"].get<int32_t>(), t.value("special", false)});
  }
  return tokens;
}

Result<StringMap<int32_t>> parse_vocab(const json& model) {
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return invalid_argument("model.vocab is missing or not an object");
  }
  StringMap<int32_t> vocab;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!valid_id(id)) return invalid_argument("model.vocab[\"" + piece + "\"] is not a valid id");
    vocab.emplace(piece, id.get<int32_t>());
  }
  return vocab;
}

Result<std::vector<std::pair<std::string, std::string>>> parse_merges(const json& model) {
  std::vector<std::pair<std::string, std::string>> merges;
  if (!model.contains("merges")) return merges;
  const json& list = model["merges"];
  if (!list.is_array()) return invalid_argument("model.merges is not an array");
  merges.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& m = list[i];
    if (m.is_string()) {
      // HF splits on ' ' and wants exactly two parts (byte-level pieces never hold a space).
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space != std::string::npos && s.find(' ', space + 1) == std::string::npos) {
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
        continue;
      }
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      continue;
    }
    return invalid_argument("model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
  }
  return merges;
}

Result<SpecialIds> resolve_special_ids(const json& root, const json& config,
                                       const std::vector<AddedToken>& added,
                                       const StringMap<int32_t>& vocab) {
  SpecialIds ids;
  auto config_bos = config_token_id(config, "bos_token", added, vocab);
  if (!config_bos.ok()) return config_bos.status();
  auto config_eos = config_token_id(config, "eos_token", added, vocab);
  if (!config_eos.ok()) return config_eos.status();

  if (auto id = template_bos(root.value("post_processor", json()))) {
    ids.bos = *id;
  } else if (*config_bos >= 0) {
    ids.bos = *config_bos;
  } else {
    for (const auto& t : added) {
      if (t.special && is_begin_of_text_name(t.content)) {
        ids.bos = t.id;
        break;
      }
    }
  }

  ids.eos = *config_eos;
  if (ids.eos >= 0) ids.end_of_turn.push_back(ids.eos);
  for (const auto& t : added) {
    if (t.special && is_end_of_turn_name(t.content)) ids.end_of_turn.push_back(t.id);
  }
  std::sort(ids.end_of_turn.begin(), ids.end_of_turn.end());
  ids.end_of_turn.erase(std::unique(ids.end_of_turn.begin(), ids.end_of_turn.end()), ids.end_of_turn.end());
  return ids;
}

}  // namespace star::tokenizer_json
