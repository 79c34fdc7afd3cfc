// StreamingDecoder: text appears only once its UTF-8 sequence is complete; pushes add up to
// decode(); broken sequences become U+FFFD as the Unicode "maximal subpart" rule says.
#include <gtest/gtest.h>

#include <map>

#include "star/tokenizer/streaming_decoder.h"
#include "tokenizer_test_util.h"

namespace star {
namespace {

constexpr const char* kFffd = "\xEF\xBF\xBD";

// id of the token that stands for exactly one byte, found through token_bytes().
std::map<uint8_t, int32_t> single_byte_tokens(const Tokenizer& tok) {
  std::map<uint8_t, int32_t> ids;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string bytes = tok.token_bytes(id);
    if (bytes.size() == 1 && !tok.is_special(id) && !ids.contains(bytes[0])) ids[bytes[0]] = id;
  }
  return ids;
}

std::vector<int32_t> byte_ids(const std::map<uint8_t, int32_t>& table, std::string_view bytes) {
  std::vector<int32_t> ids;
  for (char c : bytes) ids.push_back(table.at(static_cast<uint8_t>(c)));
  return ids;
}

std::vector<std::string> push_all(StreamingDecoder& d, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(d.push(id));
  return out;
}

TEST(StreamingDecoder, ByteLevelTokensEmitOnlyCompleteCharacters) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const auto table = single_byte_tokens(*tok);
  ASSERT_EQ(table.size(), 256u);
  StreamingDecoder d(*tok);
  // "a😀" then "日": nothing until each 4- and 3-byte sequence is complete.
  EXPECT_EQ(push_all(d, byte_ids(table, "a\xF0\x9F\x98\x80\xE6\x97\xA5")),
            (std::vector<std::string>{"a", "", "", "", "\xF0\x9F\x98\x80", "", "", "\xE6\x97\xA5"}));
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, ByteFallbackTokensEmitOnlyCompleteCharacters) {
  STAR_REQUIRE_STORIES260K(dir);
  auto tok = testing::make_stories260k_tokenizer(dir);
  ASSERT_TRUE(tok);
  const std::string text = "Hi 日本😀";
  const std::vector<int32_t> ids = tok->encode(text);
  StreamingDecoder d(*tok);
  std::string joined;
  size_t empty_pushes = 0;
  for (int32_t id : ids) {
    const std::string piece = d.push(id);
    empty_pushes += piece.empty();
    joined += piece;
    EXPECT_EQ(piece.find(kFffd), std::string::npos);  // never half a character
  }
  joined += d.flush();
  EXPECT_EQ(joined, text);
  // 日 and 本 (3 bytes) and 😀 (4 bytes) are not in this vocabulary: byte tokens, so
  // 2 + 2 + 3 pushes return nothing.
  EXPECT_EQ(empty_pushes, 7u);
}

TEST(StreamingDecoder, PushesAddUpToDecode) {
  for (const std::string name : {"llama3", "gpt2", "llama2"}) {
    auto tok = testing::load_fixture_tokenizer(name);
    ASSERT_TRUE(tok);
    const auto& expect = testing::tokenizer_cases()["tokenizers"][name];
    std::vector<std::vector<int32_t>> sequences;
    for (const auto& ids : expect["ids_parse_special"]) sequences.push_back(testing::ids_of(ids));
    for (const auto& c : expect.value("decode", nlohmann::json::array())) sequences.push_back(testing::ids_of(c["ids"]));
    for (const auto& ids : sequences) {
      for (bool skip : {true, false}) {
        StreamingDecoder d(*tok, skip);
        std::string joined;
        for (int32_t id : ids) joined += d.push(id);
        joined += d.flush();
        EXPECT_EQ(joined, tok->decode(ids, skip)) << name;
      }
    }
  }
}

TEST(StreamingDecoder, InvalidSequencesBecomeReplacementCharacters) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const auto table = single_byte_tokens(*tok);
  struct Case {
    std::string bytes;
    std::vector<std::string> pushes;
    std::string flushed;
  };
  const std::string f = kFffd;
  const std::vector<Case> cases = {
      {"\xFF", {f}, ""},                                 // never a UTF-8 byte
      {"\x80" "a", {f, "a"}, ""},                        // stray continuation byte
      {"\xE6\x97", {"", ""}, f},                         // cut short: one U+FFFD at the end
      {"\xE6" "A", {"", f + "A"}, ""},                   // lead byte without its continuation
      {"\xF0\x9F\x98\xF0\x9F\x98\x80", {"", "", "", f, "", "", "\xF0\x9F\x98\x80"}, ""},
      {"\xED\xA0\x80", {"", f + f, f}, ""},              // a surrogate: each byte its own subpart
      {"\xC0\xAF", {f, f}, ""},                          // overlong encoding
  };
  for (const Case& c : cases) {
    StreamingDecoder d(*tok);
    EXPECT_EQ(push_all(d, byte_ids(table, c.bytes)), c.pushes) << ::testing::PrintToString(c.bytes);
    EXPECT_EQ(d.flush(), c.flushed) << ::testing::PrintToString(c.bytes);
  }
}

TEST(StreamingDecoder, SpecialsAreSkippedOrKept) {
  auto tok = testing::load_fixture_tokenizer("llama3");
  ASSERT_TRUE(tok);
  const std::vector<int32_t> ids = tok->encode("Hi<|eot_id|>", {.add_bos = true, .parse_special = true});
  StreamingDecoder skip(*tok);
  std::string skipped;
  for (int32_t id : ids) skipped += skip.push(id);
  EXPECT_EQ(skipped + skip.flush(), "Hi");
  StreamingDecoder keep(*tok, /*skip_special=*/false);
  std::string kept;
  for (int32_t id : ids) kept += keep.push(id);
  EXPECT_EQ(kept + keep.flush(), "<|begin_of_text|>Hi<|eot_id|>");
}

}  // namespace
}  // namespace star
