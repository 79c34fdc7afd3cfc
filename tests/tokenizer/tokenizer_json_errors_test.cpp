// Broken or unsupported tokenizer.json files are rejected with errors that name the file and
// the problem.
#include <gtest/gtest.h>

#include <functional>

#include "tokenizer_test_util.h"

namespace star {
namespace {

nlohmann::json llama3_spec() {
  const auto& entry = testing::tokenizer_cases()["tokenizers"]["llama3"];
  return testing::read_json(testing::tokenizer_fixture_dir() / entry["file"].get<std::string>());
}

std::filesystem::path write_file(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(path) << contents;
  return path;
}

// Loads the Llama 3 fixture after `edit`; expects an error whose message holds the file name
// and `problem`.
void expect_rejected(const std::string& name, const std::function<void(nlohmann::json&)>& edit,
                     const std::string& problem, const nlohmann::json& config = nullptr) {
  nlohmann::json spec = llama3_spec();
  edit(spec);
  const auto path = write_file(name, spec.dump());
  auto tok = load_tokenizer_json(path, config);
  ASSERT_FALSE(tok.ok()) << name;
  EXPECT_NE(tok.status().message().find(path.string()), std::string::npos) << tok.status().message();
  EXPECT_NE(tok.status().message().find(problem), std::string::npos) << tok.status().message();
}

TEST(TokenizerJson, MissingFileAndBadJson) {
  const auto missing = std::filesystem::path(::testing::TempDir()) / "does_not_exist.json";
  auto tok = load_tokenizer_json(missing, nullptr);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find(missing.string()), std::string::npos);

  const auto bad = write_file("bad_json_tokenizer.json", "{\"model\": {\"type\": \"BPE\",");
  auto parsed = load_tokenizer_json(bad, nullptr);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find(bad.string()), std::string::npos);
  EXPECT_NE(parsed.status().message().find("parse"), std::string::npos) << parsed.status().message();
}

TEST(TokenizerJson, BrokenModels) {
  expect_rejected("no_model.json", [](auto& j) { j.erase("model"); }, "\"model\"");
  expect_rejected("wordpiece.json", [](auto& j) { j["model"]["type"] = "WordPiece"; }, "WordPiece");
  expect_rejected("no_vocab.json", [](auto& j) { j["model"].erase("vocab"); }, "model.vocab");
  expect_rejected("bad_id.json", [](auto& j) { j["model"]["vocab"]["the"] = -4; }, "model.vocab[\"the\"]");
  expect_rejected("vocab_type.json", [](auto& j) { j["model"]["vocab"] = "nope"; }, "model.vocab");
  expect_rejected("merges_type.json", [](auto& j) { j["model"]["merges"] = 7; }, "model.merges");
  expect_rejected("unknown_merge.json",
                  [](auto& j) { j["model"]["merges"].push_back("zzqq xxyy"); }, "\"zzqq\", which is not in model.vocab");
  expect_rejected("merge_form.json", [](auto& j) { j["model"]["merges"][3] = "a b c"; }, "model.merges[3]");
  expect_rejected("unk.json", [](auto& j) { j["model"]["unk_token"] = "<nope>"; }, "model.unk_token");
  expect_rejected("added.json", [](auto& j) { j["added_tokens"][0].erase("content"); }, "added_tokens[0]");
  expect_rejected("not_object.json", [](auto& j) { j = nlohmann::json::array({1, 2}); }, "not a JSON object");
  expect_rejected("field_type.json", [](auto& j) { j["model"]["ignore_merges"] = "yes"; }, "type_error");
}

TEST(TokenizerJson, UnsupportedPipelines) {
  expect_rejected("normalizer.json", [](auto& j) { j["normalizer"] = {{"type", "NFC"}}; }, "NFC");
  expect_rejected("punct.json", [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Punctuation"}}; },
                  "Punctuation");
  expect_rejected("no_byte_level.json", [](auto& j) { j["pre_tokenizer"] = nullptr; }, "ByteLevel");
  expect_rejected("bad_regex.json",
                  [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed"; },
                  "regex does not compile");
  expect_rejected("behavior.json", [](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; },
                  "Isolated");
  expect_rejected("suffix.json", [](auto& j) { j["model"]["end_of_word_suffix"] = "</w>"; }, "end_of_word_suffix");
  expect_rejected("metaspace.json",
                  [](auto& j) {
                    j["model"]["byte_fallback"] = true;
                    j["pre_tokenizer"] = nullptr;
                  },
                  "\"▁\" replacement");
  expect_rejected("llama2_metaspace.json",
                  [](auto& j) {
                    j["model"]["byte_fallback"] = true;
                    j["normalizer"] = nullptr;
                    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"split", false}};
                  },
                  "Metaspace");
}

TEST(TokenizerJson, ConfigTokensMustExist) {
  expect_rejected("config_eos.json", [](auto&) {}, "eos_token \"<|nope|>\"", {{"eos_token", "<|nope|>"}});
  expect_rejected("config_bos.json", [](auto&) {}, "bos_token", {{"bos_token", 3}});
  expect_rejected("config_type.json", [](auto&) {}, "tokenizer_config", nlohmann::json::array());

  // The AddedToken object form is accepted.
  const auto path = write_file("config_object.json", llama3_spec().dump());
  auto tok = load_tokenizer_json(path, {{"eos_token", {{"content", "<|end_header_id|>"}}}});
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto eos = (*tok)->eos_ids();
  EXPECT_TRUE(std::find(eos.begin(), eos.end(), *(*tok)->find_token("<|end_header_id|>")) != eos.end());
}

}  // namespace
}  // namespace star
