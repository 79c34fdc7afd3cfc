// Shared by the tokenizer tests: the HF fixtures and the stories260K vocabulary.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/tokenizer/sentencepiece_tokenizer.h"
#include "star/tokenizer/tokenizer.h"
#include "star/tokenizer/tokenizer_json.h"
#include "support/test_paths.h"

namespace star::testing {

inline std::filesystem::path tokenizer_fixture_dir() {
  return source_dir() / "tests" / "fixtures" / "tokenizer";
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << path;
  return nlohmann::json::parse(file);
}

// cases.json: {"texts": [...], "tokenizers": {"llama3": {"file", "config", "ids_plain",
// "ids_parse_special", "ids_with_bos", "decode"}, "gpt2": ..., "llama2": ...}}
inline const nlohmann::json& tokenizer_cases() {
  static const nlohmann::json cases = read_json(tokenizer_fixture_dir() / "cases.json");
  return cases;
}

inline std::unique_ptr<Tokenizer> load_fixture_tokenizer(const std::string& name) {
  const nlohmann::json& entry = tokenizer_cases()["tokenizers"][name];
  auto tok = load_tokenizer_json(tokenizer_fixture_dir() / entry["file"].get<std::string>(), entry["config"]);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

struct SpVocabulary {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

// llama2.c's tok512.bin: int32 max_token_length, then per token float32 score, int32 length,
// bytes. The exporter wrote "▁" as " " and BOS/EOS as "\n<s>\n" / "\n</s>\n"; this undoes that
// and assigns the types llama.cpp's converter gives: <unk> unknown, <s> </s> control, <0xXX> byte.
inline SpVocabulary read_llama2c_tokenizer(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << path;
  SpVocabulary v;
  int32_t max_len = 0;
  file.read(reinterpret_cast<char*>(&max_len), sizeof(max_len));
  float score = 0;
  int32_t len = 0;
  while (file.read(reinterpret_cast<char*>(&score), sizeof(score))) {
    file.read(reinterpret_cast<char*>(&len), sizeof(len));
    std::string raw(static_cast<size_t>(len), '\0');
    file.read(raw.data(), len);
    const auto id = static_cast<int32_t>(v.pieces.size());
    std::string piece;
    int32_t type = static_cast<int32_t>(SpTokenType::kNormal);
    if (id == 0) {
      piece = raw;
      type = static_cast<int32_t>(SpTokenType::kUnknown);
    } else if (id == 1 || id == 2) {
      piece = id == 1 ? "<s>" : "</s>";
      type = static_cast<int32_t>(SpTokenType::kControl);
    } else {
      for (char c : raw) piece += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      if (piece.size() == 6 && piece.starts_with("<0x")) type = static_cast<int32_t>(SpTokenType::kByte);
    }
    v.pieces.push_back(piece);
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  return v;
}

inline std::unique_ptr<Tokenizer> make_stories260k_tokenizer(const std::filesystem::path& dir) {
  SpVocabulary v = read_llama2c_tokenizer(dir / "tok512.bin");
  EXPECT_EQ(v.pieces.size(), 512u);
  auto tok = make_sentencepiece_tokenizer(v.pieces, v.scores, v.types, 1, 2, /*add_space_prefix=*/true);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

inline std::vector<int32_t> ids_of(const nlohmann::json& list) { return list.get<std::vector<int32_t>>(); }

}  // namespace star::testing
