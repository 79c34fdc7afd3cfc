// Byte-level BPE tokenizers (tokenizer.json: the Llama 3 and GPT-2 fixtures, and the synthetic
// models' vocabulary). The first byte picks the tokenizer, add_bos, parse_special and the mode
// (tokenizer_checks.h). Encode: ids inside the vocabulary, BOS first when asked, and for valid
// UTF-8 text decode(encode(text)) == text (a byte-level vocabulary covers every byte; with
// parse_special, the special tokens' text comes back when they are not skipped). Both modes: the
// streaming decoder emits valid UTF-8 that adds up to the one-shot decode.
#include <fstream>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/tokenizer_checks.h"
#include "star/model/synthetic_tokenizer.h"
#include "star/tokenizer/tokenizer_json.h"

namespace {

using star::Tokenizer;

std::unique_ptr<Tokenizer> load_or_exit(const std::filesystem::path& path, const nlohmann::json& config) {
  star::Result<std::unique_ptr<Tokenizer>> tokenizer = star::load_tokenizer_json(path, config);
  if (!tokenizer.ok()) star::fuzz::setup_failed(tokenizer.status().to_string());
  return std::move(tokenizer).value();
}

std::vector<std::unique_ptr<Tokenizer>> make_tokenizers(const star::fuzz::ScratchDir& scratch) {
  std::ifstream cases_file(star::fuzz::tokenizer_fixture("cases.json"));
  const nlohmann::json cases = nlohmann::json::parse(cases_file, nullptr, /*allow_exceptions=*/false);
  if (cases.is_discarded()) star::fuzz::setup_failed("cannot read tests/fixtures/tokenizer/cases.json");
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  for (const char* name : {"llama3", "gpt2"}) {
    const nlohmann::json& entry = cases["tokenizers"][name];
    tokenizers.push_back(
        load_or_exit(star::fuzz::tokenizer_fixture(entry["file"].get<std::string>()), entry["config"]));
  }
  star::Result<star::SyntheticTokenizer> synthetic = star::make_synthetic_tokenizer(4096);
  if (!synthetic.ok()) star::fuzz::setup_failed(synthetic.status().to_string());
  const auto path = scratch.write("tokenizer.json", synthetic->tokenizer_json.dump());
  tokenizers.push_back(load_or_exit(path, nlohmann::json::parse(synthetic->tokenizer_config.dump())));
  return tokenizers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  static const std::vector<std::unique_ptr<Tokenizer>> tokenizers = make_tokenizers(scratch);
  if (size == 0) return 0;
  const star::fuzz::TokenizerInput in = star::fuzz::split_tokenizer_input(data, size, tokenizers.size());
  const Tokenizer& tokenizer = *tokenizers[in.tokenizer];
  const std::optional<star::fuzz::CheckedEncoding> e = star::fuzz::check_input(tokenizer, in);
  if (!e || !star::fuzz::is_valid_utf8(in.rest)) return 0;
  if (!in.options.parse_special) {
    STAR_FUZZ_CHECK(e->text == in.rest, "decode(encode(text)) gave '" + e->text + "'");
  }
  const std::string bos_text = e->has_bos ? tokenizer.token_bytes(tokenizer.bos_id()) : std::string();
  STAR_FUZZ_CHECK(e->with_special == bos_text + std::string(in.rest),
                  "decode(encode(text), keep specials) gave '" + e->with_special + "'");
  return 0;
}
