// The committed retrieval model's tokenizer (models/needle-llama: byte-level BPE, every digit its
// own token) encodes exactly as the HF `tokenizers` library does
// (tests/reference/make_needle_tokenizer_fixture.py).
#include "tokenizer_test_util.h"

namespace star::testing {
namespace {

TEST(NeedleTokenizer, EncodesLikeHf) {
  const auto dir = source_dir() / "models" / "needle-llama";
  auto tok = load_tokenizer_json(dir / "tokenizer.json", read_json(dir / "tokenizer_config.json"));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const nlohmann::json cases = read_json(tokenizer_fixture_dir() / "needle_cases.json");
  ASSERT_EQ(cases["texts"].size(), cases["ids"].size());
  ASSERT_GT(cases["texts"].size(), 100u);
  // HF always matches added special tokens in text; here that is parse_special.
  const EncodeOptions like_hf{.parse_special = true};
  for (size_t i = 0; i < cases["texts"].size(); ++i) {
    const std::string text = cases["texts"][i];
    EXPECT_EQ((*tok)->encode(text, like_hf), cases["ids"][i].get<std::vector<int32_t>>()) << "text " << i << ": " << text;
    EXPECT_EQ((*tok)->decode((*tok)->encode(text)), text) << "text " << i;
  }
}

TEST(NeedleTokenizer, DigitsAreSingleTokensAndBosEosAreSpecial) {
  const auto dir = source_dir() / "models" / "needle-llama";
  auto tok = load_tokenizer_json(dir / "tokenizer.json", read_json(dir / "tokenizer_config.json"));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto ids = (*tok)->encode(" is 48151.");
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back((*tok)->token_bytes(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{" is", " ", "4", "8", "1", "5", "1", "."}));
  EXPECT_EQ((*tok)->bos_id(), *(*tok)->find_token("<|begin_of_text|>"));
  EXPECT_EQ((*tok)->eos_ids(), std::vector<int32_t>{*(*tok)->find_token("<|end_of_text|>")});
  EXPECT_EQ((*tok)->encode("x", EncodeOptions{.add_bos = true}).front(), (*tok)->bos_id());
}

}  // namespace
}  // namespace star::testing
