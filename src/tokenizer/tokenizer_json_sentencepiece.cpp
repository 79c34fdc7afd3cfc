// tokenizer.json of Llama 2 style (BPE with byte_fallback, spaces written "▁") -> the
// SentencePiece tokenizer, with each merge's rank as its score (earlier merges score higher).
#include <limits>

#include "byte_piece.h"
#include "star/tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer_json_parts.h"

namespace star::tokenizer_json {
namespace {

using nlohmann::json;

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

struct SpaceHandling {
  bool spaces_to_mark = false;  // " " -> "▁"
  bool prefix = false;          // "▁" in front of the text
};

// Legacy Llama 2: normalizer Sequence[Prepend("▁"), Replace(" ", "▁")].
Status parse_normalizer(const json& n, SpaceHandling& space) {
  const std::string type = n.value("type", "");
  if (type == "Sequence") {
    for (const json& inner : n.value("normalizers", json::array())) {
      Status s = parse_normalizer(inner, space);
      if (!s.ok()) return s;
    }
    return ok_status();
  }
  if (type == "Prepend" && n.value("prepend", "") == kSpaceMark) {
    space.prefix = true;
    return ok_status();
  }
  if (type == "Replace" && n.value("pattern", json::object()).value("String", "") == " " &&
      n.value("content", "") == kSpaceMark) {
    space.spaces_to_mark = true;
    return ok_status();
  }
  return unimplemented("normalizer \"" + type + "\" is not supported for a byte_fallback BPE");
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_llama2_sentencepiece(const json& root, const json& config) {
  const json& model = root["model"];
  SpaceHandling space;
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    Status s = parse_normalizer(root["normalizer"], space);
    if (!s.ok()) return s;
  }
  // Newer conversions write a Metaspace pre-tokenizer instead, whose prefix rules differ from
  // SentencePiece's (no second "▁" before a leading space; with prepend_scheme "first", none
  // after special tokens).
  if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
    return unimplemented("pre_tokenizer \"" + root["pre_tokenizer"].value("type", "") +
                         "\" is not supported for a byte_fallback BPE (only the legacy Prepend + Replace normalizer)");
  }
  if (!space.spaces_to_mark) {
    return unimplemented("byte_fallback BPE without the \" \" -> \"▁\" replacement is not supported");
  }

  auto vocab = parse_vocab(model);
  if (!vocab.ok()) return vocab.status();
  auto added = parse_added_tokens(root);
  if (!added.ok()) return added.status();
  auto merges = parse_merges(model);
  if (!merges.ok()) return merges.status();
  auto special_ids = resolve_special_ids(root, config, *added, *vocab);
  if (!special_ids.ok()) return special_ids.status();

  int32_t max_id = -1;
  for (const auto& [piece, id] : *vocab) max_id = std::max(max_id, id);
  for (const auto& t : *added) max_id = std::max(max_id, t.id);
  const size_t n = static_cast<size_t>(max_id + 1);
  std::vector<std::string> pieces(n);
  std::vector<bool> assigned(n, false);
  std::vector<int32_t> types(n, static_cast<int32_t>(SpTokenType::kNormal));
  for (const auto& [piece, id] : *vocab) {
    pieces[id] = piece;
    assigned[id] = true;
    if (parse_byte_piece(piece)) types[id] = static_cast<int32_t>(SpTokenType::kByte);
  }
  for (const auto& t : *added) {
    pieces[t.id] = t.content;
    assigned[t.id] = true;
    types[t.id] = static_cast<int32_t>(t.special ? SpTokenType::kControl : SpTokenType::kUserDefined);
  }
  for (size_t id = 0; id < n; ++id) {
    if (!assigned[id]) return invalid_argument("token id " + std::to_string(id) + " is not assigned to any token");
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = vocab->find(model["unk_token"].get<std::string>());
    if (it == vocab->end()) return invalid_argument("model.unk_token is not in model.vocab");
    types[it->second] = static_cast<int32_t>(SpTokenType::kUnknown);
  }

  // Pieces no merge produces keep the lowest score: HF never forms them by merging.
  std::vector<float> scores(n, std::numeric_limits<float>::lowest());
  for (size_t rank = merges->size(); rank-- > 0;) {
    const auto& [left, right] = (*merges)[rank];
    auto merged = vocab->find(left + right);
    if (merged == vocab->end() || !vocab->contains(left) || !vocab->contains(right)) {
      return invalid_argument("model.merges[" + std::to_string(rank) + "] (\"" + left + "\", \"" + right +
                              "\") names a token that is not in model.vocab");
    }
    scores[merged->second] = -static_cast<float>(rank);
  }
  return make_sentencepiece_tokenizer(std::move(pieces), std::move(scores), std::move(types), special_ids->bos,
                                      special_ids->eos, space.prefix);
}

}  // namespace star::tokenizer_json
