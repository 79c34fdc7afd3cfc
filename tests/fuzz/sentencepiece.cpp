// SentencePiece-style BPE with byte fallback: the Llama 2 tokenizer.json fixture, stories260K's
// GGUF vocabulary when ../shared has it, and a small vocabulary without the space prefix and with
// a user-defined token. The first byte picks the tokenizer, add_bos, parse_special and the mode
// (tokenizer_checks.h). Encode: ids inside the vocabulary, BOS first when asked, and for valid
// UTF-8 text without "▁" (which decodes as a space) and without parse_special (which adds a space
// prefix after each special) decode(encode(text)) == text. Both modes: the streaming decoder emits
// valid UTF-8 that adds up to the one-shot decode.
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/tokenizer_checks.h"
#include "star/model/model_loader.h"
#include "star/tokenizer/sentencepiece_tokenizer.h"
#include "star/tokenizer/tokenizer_json.h"

namespace {

using star::SpTokenType;
using star::Tokenizer;

std::unique_ptr<Tokenizer> or_exit(star::Result<std::unique_ptr<Tokenizer>> tokenizer) {
  if (!tokenizer.ok()) star::fuzz::setup_failed(tokenizer.status().to_string());
  return std::move(tokenizer).value();
}

std::unique_ptr<Tokenizer> small_vocabulary() {
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {static_cast<int32_t>(SpTokenType::kUnknown), static_cast<int32_t>(SpTokenType::kControl),
                                static_cast<int32_t>(SpTokenType::kControl)};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", b);
    pieces.push_back(piece);
    types.push_back(static_cast<int32_t>(SpTokenType::kByte));
  }
  for (const char* piece : {"\xE2\x96\x81", "\xE2\x96\x81t", "he", "\xE2\x96\x81the", "in", "er", "an",
                            "\xE2\x96\x81" "a", "on", "\xC3\xA9t\xC3\xA9", "<|user|>"}) {
    pieces.push_back(piece);
    types.push_back(static_cast<int32_t>(pieces.back() == "<|user|>" ? SpTokenType::kUserDefined : SpTokenType::kNormal));
  }
  std::vector<float> scores(pieces.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  return or_exit(star::make_sentencepiece_tokenizer(std::move(pieces), std::move(scores), std::move(types), 1, 2,
                                                    /*add_space_prefix=*/false));
}

std::vector<std::unique_ptr<Tokenizer>> make_tokenizers() {
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  const nlohmann::json llama2_config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  tokenizers.push_back(or_exit(star::load_tokenizer_json(star::fuzz::tokenizer_fixture("llama2_tokenizer.json"),
                                                         llama2_config)));
  tokenizers.push_back(small_vocabulary());
  if (auto dir = star::fuzz::stories260k_dir()) {
    star::Result<star::LoadedModel> stories = star::load_model(*dir / "stories260K.gguf");
    if (!stories.ok()) star::fuzz::setup_failed(stories.status().to_string());
    star::GgufVocabulary& v = *stories->gguf_vocabulary;
    tokenizers.push_back(or_exit(star::make_sentencepiece_tokenizer(
        std::move(v.tokens), std::move(v.scores), std::move(v.token_types), v.bos_id, v.eos_id, v.add_space_prefix)));
  }
  return tokenizers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<Tokenizer>> tokenizers = make_tokenizers();
  if (size == 0) return 0;
  const star::fuzz::TokenizerInput in = star::fuzz::split_tokenizer_input(data, size, tokenizers.size());
  const Tokenizer& tokenizer = *tokenizers[in.tokenizer];
  const std::optional<star::fuzz::CheckedEncoding> e = star::fuzz::check_input(tokenizer, in);
  if (!e) return 0;
  const bool round_trips = !in.options.parse_special && star::fuzz::is_valid_utf8(in.rest) &&
                           in.rest.find("\xE2\x96\x81") == std::string_view::npos;
  if (round_trips) STAR_FUZZ_CHECK(e->text == in.rest, "decode(encode(text)) gave '" + e->text + "'");
  return 0;
}
