// SentencePiece-style BPE against llama.cpp's tokenization of stories260K (golden.json), and the
// Llama 2-style tokenizer.json fixture against HF's tokenizers.
#include <gtest/gtest.h>

#include "star/tokenizer/streaming_decoder.h"
#include "tokenizer_test_util.h"

namespace star {
namespace {

using testing::ids_of;

TEST(SentencePieceTokenizer, MatchesLlamaCppOnEveryGoldenCase) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  const nlohmann::json golden = testing::read_json(dir / "golden.json");
  ASSERT_FALSE(golden["tokenize"].empty());
  for (const auto& c : golden["tokenize"]) {
    const std::string text = c["text"];
    const std::vector<int32_t> ids = tok->encode(text);
    EXPECT_EQ(ids, ids_of(c["ids"])) << text;
    EXPECT_EQ(tok->decode(ids), text);
  }
}

TEST(SentencePieceTokenizer, GenerationPromptsStartWithBos) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  const nlohmann::json golden = testing::read_json(dir / "golden.json");
  for (const auto& c : golden["generate"]) {
    const std::string prompt = c["prompt"];
    const std::vector<int32_t> ids = tok->encode(prompt, {.add_bos = true});
    EXPECT_EQ(ids, ids_of(c["prompt_ids"])) << prompt;
    EXPECT_EQ(tok->decode(ids), prompt);  // BOS skipped, then the prefix space removed
  }
}

TEST(SentencePieceTokenizer, VocabularyFacts) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(tok->find_token("<s>"), 1);
  EXPECT_EQ(tok->find_token("<0x0A>"), 3 + 0x0A);
  EXPECT_FALSE(tok->find_token("no such piece").has_value());
  EXPECT_TRUE(tok->is_special(0));
  EXPECT_TRUE(tok->is_special(2));
  EXPECT_FALSE(tok->is_special(3 + 'a'));
  EXPECT_EQ(tok->token_bytes(3 + 0xE6), "\xE6");
  EXPECT_EQ(tok->token_bytes(-1), "");
  EXPECT_EQ(tok->token_bytes(512), "");
  EXPECT_TRUE(tok->adds_space_prefix());
}

TEST(SentencePieceTokenizer, ParseSpecialSplitsControlTokensAndPrefixesTheTextAfterThem) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  // As llama.cpp: each text fragment after a special gets the space prefix again.
  std::vector<int32_t> expected = {1};
  for (int32_t id : tok->encode("Once upon")) expected.push_back(id);
  expected.push_back(2);
  for (int32_t id : tok->encode("a time")) expected.push_back(id);
  EXPECT_EQ(tok->encode("<s>Once upon</s>a time", {.parse_special = true}), expected);

  // Without parse_special the markers are text, and come back as text.
  const std::vector<int32_t> plain = tok->encode("<s>Once upon</s>a time");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tok->decode(plain), "<s>Once upon</s>a time");
  EXPECT_TRUE(tok->encode("").empty());
  EXPECT_EQ(tok->encode("", {.add_bos = true}), std::vector<int32_t>{1});
}

TEST(SentencePieceTokenizer, DecodeKeepsSpecialsWhenAskedAndContinuationSpaces) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  const std::vector<int32_t> ids = tok->encode("Once upon", {.add_bos = true});
  EXPECT_EQ(tok->decode(ids, /*skip_special=*/false), "<s> Once upon");  // as HF's Strip decoder

  // Generated tokens continue the prompt: their leading space is real text.
  const std::vector<int32_t> time = tok->encode("time");  // "▁time"
  StreamingDecoder continuation(*tok, /*skip_special=*/true, /*continues_text=*/true);
  std::string text;
  for (int32_t id : time) text += continuation.push(id);
  text += continuation.flush();
  EXPECT_EQ(text, " time");
  EXPECT_EQ(tok->decode(time), "time");
}

TEST(SentencePieceTokenizer, RejectsInconsistentVocabularies) {
  auto sizes = make_sentencepiece_tokenizer({"a", "b"}, {0.f}, {1, 1}, -1, -1, true);
  ASSERT_FALSE(sizes.ok());
  EXPECT_NE(sizes.status().message().find("1 scores"), std::string::npos);
  auto type = make_sentencepiece_tokenizer({"<unk>", "a"}, {0.f, 0.f}, {2, 9}, -1, -1, true);
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("type 9"), std::string::npos);
  auto byte = make_sentencepiece_tokenizer({"<unk>", "<0xZZ>"}, {0.f, 0.f}, {2, 6}, -1, -1, true);
  ASSERT_FALSE(byte.ok());
  EXPECT_NE(byte.status().message().find("<0xZZ>"), std::string::npos);
  auto bos = make_sentencepiece_tokenizer({"<unk>"}, {0.f}, {2}, 5, -1, true);
  ASSERT_FALSE(bos.ok());
  auto no_fallback = make_sentencepiece_tokenizer({"a"}, {0.f}, {1}, -1, -1, true);
  ASSERT_FALSE(no_fallback.ok());
  EXPECT_NE(no_fallback.status().message().find("no token for byte"), std::string::npos);
  EXPECT_FALSE(make_sentencepiece_tokenizer({}, {}, {}, -1, -1, true).ok());
}

TEST(SentencePieceTokenizer, BytesWithoutAPieceFallBackToUnknown) {
  // A vocabulary without byte pieces: characters it cannot spell become <unk>.
  auto tok = make_sentencepiece_tokenizer({"<unk>", "\xE2\x96\x81", "a", "\xE2\x96\x81" "a"}, {0.f, 0.f, 0.f, -1.f},
                                          {2, 1, 1, 1}, -1, -1, true);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("a"), (std::vector<int32_t>{3}));
  EXPECT_EQ((*tok)->encode("ab"), (std::vector<int32_t>{3, 0}));
}

// Llama 2 style tokenizer.json (byte_fallback BPE, "▁" normalizer) read as a SentencePiece
// vocabulary with merge ranks as scores, against HF on every fixture string.
TEST(SentencePieceTokenizer, Llama2TokenizerJsonMatchesHf) {
  auto tok = testing::load_fixture_tokenizer("llama2");
  ASSERT_TRUE(tok);
  const auto& texts = testing::tokenizer_cases()["texts"];
  const auto& expect = testing::tokenizer_cases()["tokenizers"]["llama2"];
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i];
    EXPECT_EQ(tok->encode(text, {.parse_special = true}), ids_of(expect["ids_parse_special"][i])) << i << ": " << text;
    const std::vector<int32_t> plain = tok->encode(text);
    EXPECT_EQ(plain, ids_of(expect["ids_plain"][i])) << i << ": " << text;
    EXPECT_EQ(tok->decode(plain), text) << i;
  }
  for (const auto& [index, ids] : expect["ids_with_bos"].items()) {
    const std::string text = texts[std::stoul(index)];
    EXPECT_EQ(tok->encode(text, {.add_bos = true, .parse_special = true}), ids_of(ids)) << text;
  }
  EXPECT_EQ(tok->bos_id(), tok->find_token("<s>"));
  EXPECT_EQ(tok->eos_ids(), std::vector<int32_t>{*tok->find_token("</s>")});
  EXPECT_TRUE(tok->adds_space_prefix());
}

}  // namespace
}  // namespace star
