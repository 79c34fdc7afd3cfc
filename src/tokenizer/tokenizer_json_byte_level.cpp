// tokenizer.json -> ByteLevelBpeTokenizer (GPT-2, Llama 3).
#include "byte_level_bpe_tokenizer.h"
#include "tokenizer_json_parts.h"

namespace star::tokenizer_json {
namespace {

using nlohmann::json;

// Appends the steps of a pre_tokenizer; sets *has_byte_level when a ByteLevel step is present.
Status parse_pre_tokenizer(const json& p, std::vector<RegexSplitter>& steps, bool* has_byte_level) {
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const json& inner : p.value("pretokenizers", json::array())) {
      Status s = parse_pre_tokenizer(inner, steps, has_byte_level);
      if (!s.ok()) return s;
    }
    return ok_status();
  }
  if (type == "ByteLevel") {
    *has_byte_level = true;
    if (p.value("add_prefix_space", false)) {
      return unimplemented("pre_tokenizer ByteLevel with add_prefix_space is not supported");
    }
    if (!p.value("use_regex", true)) return ok_status();
    auto gpt2 = RegexSplitter::compile(std::string(kGpt2Pattern));
    if (!gpt2.ok()) return gpt2.status();
    steps.push_back(std::move(gpt2).value());
    return ok_status();
  }
  if (type == "Split") {
    const json& pattern = p.value("pattern", json::object());
    if (!pattern.contains("Regex") || !pattern["Regex"].is_string()) {
      return unimplemented("pre_tokenizer Split: only {\"Regex\": ...} patterns are supported");
    }
    if (p.value("behavior", "") != "Isolated" || p.value("invert", false)) {
      return unimplemented("pre_tokenizer Split: only behavior \"Isolated\" without invert is supported");
    }
    auto regex = RegexSplitter::compile(pattern["Regex"].get<std::string>());
    if (!regex.ok()) return invalid_argument("pre_tokenizer Split: " + regex.status().message());
    steps.push_back(std::move(regex).value());
    return ok_status();
  }
  return unimplemented("pre_tokenizer type \"" + type + "\" is not supported");
}

bool is_null_or_empty(const json& model, const char* key) {
  return !model.contains(key) || model[key].is_null() || model[key] == "";
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_byte_level_bpe(const json& root, const json& config) {
  const json& model = root["model"];
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    return unimplemented("normalizer \"" + root["normalizer"].value("type", "") +
                         "\" is not supported for byte-level BPE");
  }
  if (!is_null_or_empty(model, "continuing_subword_prefix") || !is_null_or_empty(model, "end_of_word_suffix")) {
    return unimplemented("model.continuing_subword_prefix / end_of_word_suffix are not supported");
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0) {
    return unimplemented("model.dropout is not supported");
  }

  ByteLevelBpeTokenizer::Spec spec;
  bool has_byte_level = false;
  if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
    Status s = parse_pre_tokenizer(root["pre_tokenizer"], spec.pre_tokenizer, &has_byte_level);
    if (!s.ok()) return s;
  }
  if (!has_byte_level) {
    return unimplemented("BPE without byte_fallback needs a ByteLevel pre_tokenizer (byte-level BPE)");
  }

  auto vocab = parse_vocab(model);
  if (!vocab.ok()) return vocab.status();
  auto merges = parse_merges(model);
  if (!merges.ok()) return merges.status();
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const auto& [left, right] = (*merges)[rank];
    auto l = vocab->find(left);
    auto r = vocab->find(right);
    auto m = vocab->find(left + right);
    if (l == vocab->end() || r == vocab->end() || m == vocab->end()) {
      const std::string& unknown = l == vocab->end() ? left : r == vocab->end() ? right : left + right;
      return invalid_argument("model.merges[" + std::to_string(rank) + "] (\"" + left + "\", \"" + right +
                              "\") names \"" + unknown + "\", which is not in model.vocab");
    }
    spec.merges.add(l->second, r->second, m->second, static_cast<int32_t>(rank));
  }

  auto added = parse_added_tokens(root);
  if (!added.ok()) return added.status();
  auto special_ids = resolve_special_ids(root, config, *added, *vocab);
  if (!special_ids.ok()) return special_ids.status();

  if (!is_null_or_empty(model, "unk_token")) {
    const std::string unk = model["unk_token"].get<std::string>();
    auto it = vocab->find(unk);
    if (it == vocab->end()) return invalid_argument("model.unk_token \"" + unk + "\" is not in model.vocab");
    spec.unk_id = it->second;
  }
  spec.ignore_merges = model.value("ignore_merges", false);
  spec.fuse_unk = model.value("fuse_unk", false);
  spec.vocab = std::move(vocab).value();
  for (auto& t : *added) spec.added_tokens.push_back({std::move(t.content), t.id, t.special});
  spec.bos_id = special_ids->bos;
  spec.eos_ids = special_ids->end_of_turn;
  return std::unique_ptr<Tokenizer>(std::make_unique<ByteLevelBpeTokenizer>(std::move(spec)));
}

}  // namespace star::tokenizer_json
