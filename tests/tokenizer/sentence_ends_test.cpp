// sentence_end_tokens on real vocabularies (the HF fixtures: GPT-2's byte-level BPE, Llama 2's
// SentencePiece): the tokens a text's sentences and lines end on are marked, and no other.
#include "star/tokenizer/sentence_ends.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer_test_util.h"

namespace star {
namespace {

// Cutting a text after each marked token gives its sentences and lines, each ending in '.', '!',
// '?' or a newline (then perhaps a closing quote or bracket), and a last piece that is the
// unfinished one.
void expect_cut_at_sentence_ends(const std::string& name) {
  SCOPED_TRACE(name);
  std::unique_ptr<Tokenizer> tok = testing::load_fixture_tokenizer(name);
  ASSERT_TRUE(tok);
  const std::vector<uint8_t> ends = sentence_end_tokens(*tok);
  ASSERT_EQ(ends.size(), static_cast<size_t>(tok->vocab_size()));
  const std::string text =
      "The grass is green. The sky is blue! Is it \"yes?\" A list:\nfirst line\nsecond (line.) And then some";
  const std::vector<int32_t> ids = tok->encode(text);
  std::vector<std::string> pieces;
  size_t from = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ends[static_cast<size_t>(ids[i])] == 0) continue;
    pieces.push_back(tok->decode(std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.begin() + static_cast<std::ptrdiff_t>(i) + 1)));
    from = i + 1;
  }
  const std::string rest = tok->decode(std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end()));
  // A closing quote or bracket may be its own token, after the cut: compare without them.
  const std::vector<std::string> expected_ends = {"green.", "blue!", "\"yes?", ":\n", "line\n", "(line."};
  ASSERT_EQ(pieces.size(), expected_ends.size()) << "rest: " << rest;
  for (size_t p = 0; p < pieces.size(); ++p) {
    const std::string piece = pieces[p].substr(0, pieces[p].find_last_not_of(" \"')") + 1);
    const std::string& end = expected_ends[p];
    ASSERT_GE(piece.size(), end.size());
    EXPECT_EQ(piece.substr(piece.size() - end.size()), end) << "piece " << p << ": '" << piece << "'";
  }
  EXPECT_NE(rest.find("And then some"), std::string::npos) << rest;
  // Special tokens are never marked, whatever their text.
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    if (tok->is_special(id)) EXPECT_EQ(ends[static_cast<size_t>(id)], 0) << id;
  }
}

TEST(SentenceEndTokens, ByteLevelBpeMarksTheTokensSentencesAndLinesEndOn) { expect_cut_at_sentence_ends("gpt2"); }

TEST(SentenceEndTokens, SentencePieceMarksTheTokensSentencesAndLinesEndOn) { expect_cut_at_sentence_ends("llama2"); }

}  // namespace
}  // namespace star
