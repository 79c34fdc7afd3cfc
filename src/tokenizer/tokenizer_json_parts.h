// Pieces of an HF tokenizer.json shared by both vocabulary kinds it can describe. Errors here
// name the field; load_tokenizer_json() puts the file name in front.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/common/status.h"
#include "star/tokenizer/tokenizer.h"
#include "string_map.h"

namespace star::tokenizer_json {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special;
};

// Ids above this are taken for a corrupt file rather than allocated for.
inline constexpr int64_t kMaxTokenId = 1 << 24;

// "added_tokens": [{"id", "content", "special"}, ...]; absent means none.
Result<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& root);
// "model.vocab": {"piece": id, ...}
Result<StringMap<int32_t>> parse_vocab(const nlohmann::json& model);
// "model.merges" as "a b" strings or ["a", "b"] pairs, in rank order.
Result<std::vector<std::pair<std::string, std::string>>> parse_merges(const nlohmann::json& model);

struct SpecialIds {
  int32_t bos = -1;
  int32_t eos = -1;                // tokenizer_config's eos_token; -1 when it names none
  std::vector<int32_t> end_of_turn;  // eos plus known end-of-turn added tokens, sorted
};
// BOS from the post_processor's template, else tokenizer_config's bos_token, else a special
// added token with a well-known BOS name. Config tokens are looked up in added_tokens, then vocab.
Result<SpecialIds> resolve_special_ids(const nlohmann::json& root, const nlohmann::json& config,
                                       const std::vector<AddedToken>& added,
                                       const StringMap<int32_t>& vocab);

Result<std::unique_ptr<Tokenizer>> make_byte_level_bpe(const nlohmann::json& root,
                                                       const nlohmann::json& config);
Result<std::unique_ptr<Tokenizer>> make_llama2_sentencepiece(const nlohmann::json& root,
                                                             const nlohmann::json& config);

}  // namespace star::tokenizer_json
