#include "star/tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "byte_level_bpe_tokenizer.h"
#include "special_token_names.h"
#include "star/tokenizer/sentencepiece_tokenizer.h"

namespace star {
namespace {

// A gpt2 vocabulary's pre-tokenizer, as HF's tokenizer.json for that model family writes it: the
// regex steps in order, and whether a pre-token already in the vocabulary skips the merges.
struct PreTokenizer {
  std::string_view name;
  std::vector<std::string_view> patterns;
  bool ignore_merges;
  bool add_bos_by_default;
};

constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2 is Llama 3's pattern with single digits.
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::vector<PreTokenizer>& known_pre_tokenizers() {
  static const std::vector<PreTokenizer> known = {
      {"llama-bpe", {kLlama3Pattern}, true, true},
      {"llama3", {kLlama3Pattern}, true, true},
      {"llama-v3", {kLlama3Pattern}, true, true},
      // HF's Digits(individual_digits) then ByteLevel with GPT-2's regex.
      {"smollm", {R"(\p{N})", kGpt2Pattern}, false, false},
      {"gpt2", {kGpt2Pattern}, false, false},
      {"qwen2", {kQwen2Pattern}, false, false},
  };
  return known;
}

std::string known_pre_tokenizer_names() {
  std::string names;
  for (const PreTokenizer& p : known_pre_tokenizers()) names += (names.empty() ? "'" : ", '") + std::string(p.name) + "'";
  return names;
}

Result<std::unique_ptr<Tokenizer>> make_gpt2(GgufVocabulary v, const std::string& where) {
  const auto& known = known_pre_tokenizers();
  auto pre = std::find_if(known.begin(), known.end(), [&](const PreTokenizer& p) { return p.name == v.pre; });
  if (pre == known.end()) {
    const std::string what = v.pre.empty() ? "a gpt2 vocabulary without tokenizer.ggml.pre"
                                           : "tokenizer.ggml.pre '" + v.pre + "'";
    return unimplemented(where + ": " + what + " is not supported (known: " + known_pre_tokenizer_names() + ")");
  }
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size()) {
    return invalid_argument(where + ": tokenizer.ggml.token_type and tokenizer.ggml.tokens differ in length");
  }

  ByteLevelBpeTokenizer::Spec spec;
  for (std::string_view pattern : pre->patterns) {
    auto regex = RegexSplitter::compile(std::string(pattern));
    if (!regex.ok()) return regex.status();
    spec.pre_tokenizer.push_back(std::move(regex).value());
  }
  spec.ignore_merges = pre->ignore_merges;

  std::vector<int32_t> end_of_turn;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    spec.vocab.insert_or_assign(v.tokens[i], id);
    const auto type = v.token_types.empty() ? SpTokenType::kNormal : static_cast<SpTokenType>(v.token_types[i]);
    if (type == SpTokenType::kControl || type == SpTokenType::kUserDefined) {
      spec.added_tokens.push_back({v.tokens[i], id, /*special=*/type == SpTokenType::kControl});
    }
    if (type == SpTokenType::kControl && is_end_of_turn_name(v.tokens[i])) end_of_turn.push_back(id);
  }
  for (size_t rank = 0; rank < v.merges.size(); ++rank) {
    const std::string& merge = v.merges[rank];
    const size_t space = merge.find(' ');
    const std::string what = where + ": tokenizer.ggml.merges[" + std::to_string(rank) + "] \"" + merge + "\"";
    if (space == std::string::npos || merge.find(' ', space + 1) != std::string::npos) {
      return invalid_argument(what + " is not two tokens separated by one space");
    }
    const std::string left = merge.substr(0, space);
    const std::string right = merge.substr(space + 1);
    auto l = spec.vocab.find(left);
    auto r = spec.vocab.find(right);
    auto m = spec.vocab.find(left + right);
    if (l == spec.vocab.end() || r == spec.vocab.end() || m == spec.vocab.end()) {
      const std::string& unknown = l == spec.vocab.end() ? left : r == spec.vocab.end() ? right : left + right;
      return invalid_argument(what + " names \"" + unknown + "\", which is not in tokenizer.ggml.tokens");
    }
    spec.merges.add(l->second, r->second, m->second, static_cast<int32_t>(rank));
  }

  spec.bos_id = v.add_bos.value_or(pre->add_bos_by_default) ? v.bos_id : -1;
  for (int32_t id : {v.eos_id, v.eot_id}) {
    if (id >= 0) end_of_turn.push_back(id);
  }
  std::sort(end_of_turn.begin(), end_of_turn.end());
  end_of_turn.erase(std::unique(end_of_turn.begin(), end_of_turn.end()), end_of_turn.end());
  spec.eos_ids = std::move(end_of_turn);
  return std::unique_ptr<Tokenizer>(std::make_unique<ByteLevelBpeTokenizer>(std::move(spec)));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_gguf_tokenizer(GgufVocabulary v, const std::string& where) {
  if (v.model == "llama") {
    return make_sentencepiece_tokenizer(std::move(v.tokens), std::move(v.scores), std::move(v.token_types), v.bos_id,
                                        v.eos_id, v.add_space_prefix);
  }
  if (v.model == "gpt2") return make_gpt2(std::move(v), where);
  return unimplemented(where + ": GGUF tokenizer model '" + v.model +
                       "' is not supported (only 'llama', SentencePiece-style BPE, and 'gpt2', byte-level BPE)");
}

}  // namespace star
