// Byte-level BPE from tokenizer.json (Llama 3 and GPT-2 styles) against HF's tokenizers on every
// fixture string, with and without special-token parsing.
#include <gtest/gtest.h>


#include "tokenizer_test_util.h"

namespace star {
namespace {

using testing::ids_of;

void expect_matches_hf(const Tokenizer& tok, const std::string& name) {
  const auto& texts = testing::tokenizer_cases()["texts"];
  const auto& expect = testing::tokenizer_cases()["tokenizers"][name];
  ASSERT_GT(texts.size(), 300u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i];
    const std::vector<int32_t> special = tok.encode(text, {.parse_special = true});
    EXPECT_EQ(special, ids_of(expect["ids_parse_special"][i])) << name << " #" << i << ": " << text;
    EXPECT_EQ(tok.decode(special, /*skip_special=*/false), text) << name << " #" << i;
    const std::vector<int32_t> plain = tok.encode(text);
    EXPECT_EQ(plain, ids_of(expect["ids_plain"][i])) << name << " #" << i << ": " << text;
    EXPECT_EQ(tok.decode(plain), text) << name << " #" << i;
  }
  for (const auto& [index, ids] : expect["ids_with_bos"].items()) {
    const std::string text = texts[std::stoul(index)];
    EXPECT_EQ(tok.encode(text, {.add_bos = true, .parse_special = true}), ids_of(ids)) << text;
  }
  for (const auto& c : expect["decode"]) {
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    EXPECT_EQ(tok.decode(ids), c["skip_special"].get<std::string>()) << c["ids"];
    EXPECT_EQ(tok.decode(ids, /*skip_special=*/false), c["keep_special"].get<std::string>()) << c["ids"];
  }
}

TEST(ByteLevelBpe, Llama3StyleMatchesHf) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  expect_matches_hf(*tok, "llama3");
}

TEST(ByteLevelBpe, Gpt2StyleMatchesHf) {
  auto tok = testing::load_fixture_tokenizer("gpt2");
  ASSERT_TRUE(tok);
  expect_matches_hf(*tok, "gpt2");
}

TEST(ByteLevelBpe, MergesWrittenAsPairsReadTheSame) {
  // tokenizers >= 0.20 writes merges as ["a", "b"]; the fixture (0.19) as "a b".
  const auto& entry = testing::tokenizer_cases()["tokenizers"]["llama3"];
  nlohmann::json spec = testing::read_json(testing::tokenizer_fixture_dir() / entry["file"].get<std::string>());
  ASSERT_TRUE(spec["model"]["merges"][0].is_string());
  for (auto& m : spec["model"]["merges"]) {
    const std::string s = m;
    m = nlohmann::json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  const auto path = std::filesystem::path(::testing::TempDir()) / "pair_merges_tokenizer.json";
  std::ofstream(path) << spec.dump();
  auto tok = load_tokenizer_json(path, entry["config"]);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& texts = testing::tokenizer_cases()["texts"];
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ((*tok)->encode(texts[i].get<std::string>()), ids_of(entry["ids_plain"][i])) << i;
  }
}

TEST(ByteLevelBpe, SpecialIdsComeFromTheFiles) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const auto& entry = testing::tokenizer_cases()["tokenizers"]["llama3"];
  const nlohmann::json spec = testing::read_json(testing::tokenizer_fixture_dir() / entry["file"].get<std::string>());
  std::map<std::string, int32_t> added;
  for (const auto& t : spec["added_tokens"]) added[t["content"]] = t["id"];
  EXPECT_EQ(tok->bos_id(), added.at("<|begin_of_text|>"));
  std::vector<int32_t> eos = {added.at("<|end_of_text|>"), added.at("<|eot_id|>")};
  std::sort(eos.begin(), eos.end());
  EXPECT_EQ(tok->eos_ids(), eos);
  for (const auto& [content, id] : added) {
    EXPECT_EQ(tok->find_token(content), id);
    EXPECT_TRUE(tok->is_special(id));
    EXPECT_EQ(tok->token_bytes(id), content);
  }
  EXPECT_EQ(tok->find_token("\xC4\xA0the"), spec["model"]["vocab"]["\xC4\xA0the"].get<int32_t>());  // "Ġthe"
  EXPECT_EQ(tok->token_bytes(*tok->find_token("\xC4\xA0the")), " the");
  EXPECT_EQ(tok->vocab_size(), static_cast<int64_t>(spec["model"]["vocab"].size()));
  EXPECT_FALSE(tok->adds_space_prefix());

  // Without a tokenizer_config: BOS still from the template, end-of-turn ids from added_tokens.
  auto bare = load_tokenizer_json(testing::tokenizer_fixture_dir() / entry["file"].get<std::string>(), nullptr);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ((*bare)->bos_id(), tok->bos_id());
  EXPECT_EQ((*bare)->eos_ids(), eos);
}

TEST(ByteLevelBpe, ParseSpecialOnlyWhenAsked) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const int32_t eot = *tok->find_token("<|eot_id|>");
  const std::string text = "Hi<|eot_id|>";
  const std::vector<int32_t> parsed = tok->encode(text, {.parse_special = true});
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed.back(), eot);
  EXPECT_EQ(std::vector<int32_t>(parsed.begin(), parsed.end() - 1), tok->encode("Hi"));
  const std::vector<int32_t> plain = tok->encode(text);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(tok->decode(plain), text);
  EXPECT_EQ(tok->decode(parsed), "Hi");  // specials skipped by default
}

TEST(ByteLevelBpe, InvalidUtf8InputIsEncodedByteForByte) {
  // HF cannot take invalid UTF-8 at all; we keep every byte so decoding reproduces the input
  // (with U+FFFD where the bytes are not UTF-8).
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const std::string text = "ab\xFF\xC3 cd\xE6\x97";
  std::string bytes;
  for (int32_t id : tok->encode(text)) bytes += tok->token_bytes(id);
  EXPECT_EQ(bytes, text);
  EXPECT_EQ(tok->decode(tok->encode(text)), "ab\xEF\xBF\xBD\xEF\xBF\xBD cd\xEF\xBF\xBD");
}

TEST(ByteLevelBpe, LongPathologicalInputsRoundTrip) {
  // One 200 KB word and one 200 KB whitespace run: quadratic merging would not finish.
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const std::string word(200000, 'a');
  const std::string spaces = std::string(200000, ' ') + "x";
  EXPECT_EQ(tok->decode(tok->encode(word)), word);
  EXPECT_EQ(tok->decode(tok->encode(spaces)), spaces);
}

}  // namespace
}  // namespace star
