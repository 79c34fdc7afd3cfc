// GGUF "gpt2" vocabularies (byte-level BPE from tokenizer.ggml.tokens + merges) against HF's
// tokenizers: SmolLM2's real vocabulary (smollm pre-tokenizer) and the Llama 3 fixture vocabulary
// written out as llama.cpp's converter would (llama-bpe pre-tokenizer).
#include <gtest/gtest.h>

#include <fstream>

#include "model/gguf_builder.h"
#include "star/model/gguf_vocabulary.h"
#include "star/tokenizer/gguf_tokenizer.h"
#include "support/model_cache.h"
#include "support/temp_dir.h"
#include "tokenizer_test_util.h"

namespace star {
namespace {

using testing::GgufBuilder;
using testing::ids_of;
using testing::TempDir;

constexpr int32_t kNormal = 1;
constexpr int32_t kControl = 3;

// A vocabulary-only GGUF of the Llama 3 fixture tokenizer.json, as llama.cpp's converter writes
// one: tokens by id, "a b" merges (then `extra_merges`), HF's special added tokens as CONTROL.
GgufBuilder llama3_fixture_gguf(const std::string& pre, const std::vector<std::string>& extra_merges = {}) {
  const auto& entry = testing::tokenizer_cases()["tokenizers"]["llama3"];
  const nlohmann::json spec = testing::read_json(testing::tokenizer_fixture_dir() / entry["file"].get<std::string>());
  std::vector<std::string> tokens(spec["model"]["vocab"].size());
  std::vector<int32_t> types(tokens.size(), kNormal);
  for (const auto& [piece, id] : spec["model"]["vocab"].items()) tokens.at(id.get<size_t>()) = piece;
  for (const auto& added : spec["added_tokens"]) {
    const size_t id = added["id"].get<size_t>();
    if (id >= tokens.size()) tokens.resize(id + 1), types.resize(id + 1, kNormal);
    tokens[id] = added["content"];
    types[id] = kControl;
  }
  std::vector<std::string> merges;
  for (const auto& m : spec["model"]["merges"]) merges.push_back(m);
  merges.insert(merges.end(), extra_merges.begin(), extra_merges.end());
  GgufBuilder b;
  b.kv_string("general.architecture", "llama")
      .kv_string("tokenizer.ggml.model", "gpt2")
      .kv_string("tokenizer.ggml.pre", pre)
      .kv_strings("tokenizer.ggml.tokens", tokens)
      .kv_array<int32_t>("tokenizer.ggml.token_type", testing::kI32, types)
      .kv_strings("tokenizer.ggml.merges", merges)
      .kv<uint32_t>("tokenizer.ggml.bos_token_id", testing::kU32, 0)
      .kv<uint32_t>("tokenizer.ggml.eos_token_id", testing::kU32, 1)
      .kv<uint32_t>("tokenizer.ggml.eot_token_id", testing::kU32, 2);
  return b;
}

Result<std::unique_ptr<Tokenizer>> tokenizer_of(const TempDir& dir, const GgufBuilder& b) {
  const auto path = dir / "vocab.gguf";
  std::ofstream(path, std::ios::binary) << b.build();
  auto vocabulary = read_gguf_vocabulary(path);
  if (!vocabulary.ok()) return vocabulary.status();
  return make_gguf_tokenizer(std::move(vocabulary).value(), path.string());
}

TEST(GgufGpt2Vocabulary, LlamaBpeMatchesHf) {
  TempDir dir;
  auto tok = tokenizer_of(dir, llama3_fixture_gguf("llama-bpe"));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& texts = testing::tokenizer_cases()["texts"];
  const auto& expect = testing::tokenizer_cases()["tokenizers"]["llama3"];
  ASSERT_GT(texts.size(), 300u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i];
    const auto special = (*tok)->encode(text, {.parse_special = true});
    EXPECT_EQ(special, ids_of(expect["ids_parse_special"][i])) << "#" << i << ": " << text;
    EXPECT_EQ((*tok)->decode(special, /*skip_special=*/false), text) << "#" << i;
    EXPECT_EQ((*tok)->encode(text), ids_of(expect["ids_plain"][i])) << "#" << i << ": " << text;
  }
  // Llama 3 adds BOS when the file does not say otherwise, as llama.cpp.
  for (const auto& [index, ids] : expect["ids_with_bos"].items()) {
    const std::string text = texts[std::stoul(index)];
    EXPECT_EQ((*tok)->encode(text, {.add_bos = true, .parse_special = true}), ids_of(ids)) << text;
  }
  EXPECT_EQ((*tok)->eos_ids(), (std::vector<int32_t>{1, 2}));
}

TEST(GgufGpt2Vocabulary, AddBosTokenFalseMeansNoBos) {
  TempDir dir;
  auto tok = tokenizer_of(dir, llama3_fixture_gguf("llama-bpe").kv_bool("tokenizer.ggml.add_bos_token", false));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->bos_id(), -1);
  EXPECT_EQ((*tok)->encode("hello", {.add_bos = true}), (*tok)->encode("hello"));
}

TEST(GgufGpt2Vocabulary, UnknownPreTokenizerAndModelAreRefusedByName) {
  TempDir dir;
  auto tok = tokenizer_of(dir, llama3_fixture_gguf("deepseek-coder"));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.pre 'deepseek-coder'"), std::string::npos)
      << tok.status().message();
  EXPECT_NE(tok.status().message().find("vocab.gguf"), std::string::npos) << tok.status().message();

  GgufVocabulary no_pre;
  no_pre.model = "gpt2";
  auto missing = make_gguf_tokenizer(no_pre, "m.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("without tokenizer.ggml.pre"), std::string::npos)
      << missing.status().message();

  GgufVocabulary v;
  v.model = "rwkv";
  auto rwkv = make_gguf_tokenizer(v, "m.gguf");
  ASSERT_FALSE(rwkv.ok());
  EXPECT_NE(rwkv.status().message().find("tokenizer model 'rwkv'"), std::string::npos) << rwkv.status().message();
}

TEST(GgufGpt2Vocabulary, MergeNamingAnUnknownTokenIsRefused) {
  TempDir dir;
  auto tok = tokenizer_of(dir, llama3_fixture_gguf("llama-bpe", {"q zzzzqq"}));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("] \"q zzzzqq\" names \"zzzzqq\""), std::string::npos)
      << tok.status().message();
}

TEST(GgufGpt2Vocabulary, SmolLm2MatchesHf) {
  STAR_REQUIRE_SMOLLM2(path);
  auto vocabulary = read_gguf_vocabulary(path);
  // The vocabulary needs no weights, but opening the file checks every tensor's type: a reader
  // without the block-quantized types cannot open SmolLM2's Q4_1/Q8_0 file at all.
  if (vocabulary.status().code() == StatusCode::kUnimplemented &&
      vocabulary.status().message().find("ggml type") != std::string::npos) {
    GTEST_SKIP() << "this build's GGUF reader cannot open " << path << ": " << vocabulary.status().message();
  }
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status().to_string();
  EXPECT_EQ(vocabulary->pre, "smollm");
  EXPECT_EQ(vocabulary->add_bos, false);
  auto tok = make_gguf_tokenizer(std::move(vocabulary).value(), path.string());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();

  const nlohmann::json cases = testing::read_json(testing::tokenizer_fixture_dir() / "smollm2_cases.json");
  const auto& texts = cases["texts"];
  ASSERT_GE(texts.size(), 100u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i];
    const auto special = (*tok)->encode(text, {.parse_special = true});
    EXPECT_EQ(special, ids_of(cases["ids_parse_special"][i])) << "#" << i << ": " << text;
    EXPECT_EQ((*tok)->decode(special, /*skip_special=*/false), text) << "#" << i;
    const auto plain = (*tok)->encode(text, {.add_bos = true});  // add_bos_token false: no BOS
    EXPECT_EQ(plain, ids_of(cases["ids_plain"][i])) << "#" << i << ": " << text;
    EXPECT_EQ((*tok)->decode(plain), text) << "#" << i;
  }
  // <|im_end|> is the GGUF's eos; <|endoftext|> is a known end of text too.
  EXPECT_EQ((*tok)->eos_ids(), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ((*tok)->find_token("<|im_end|>"), 2);
  EXPECT_TRUE((*tok)->is_special(1));
}

}  // namespace
}  // namespace star
