// star-eval's --variants: columns named by the JSON keys, each a validated AttentionConfig.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <unistd.h>

#include "star/eval/eval_variants.h"

namespace star::eval {
namespace {

void expect_error_mentions(const Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "\"" << part << "\" missing from: " << status.message();
  }
}

TEST(EvalVariants, EachNameGetsItsConfigOnTheDefaults) {
  const nlohmann::json json = nlohmann::json::parse(R"({
    "star-overlap64": {"algorithm": "star", "boundary_overlap": 64},
    "pulsar-sink8": {"algorithm": "pulsar", "sink_tokens": 8, "scoring": "bm25"}
  })");
  Result<std::vector<EvalVariant>> variants = eval_variants_from_json(json, {"dense", "star"});
  ASSERT_TRUE(variants.ok()) << variants.status().to_string();
  ASSERT_EQ(variants->size(), 2u);
  // Sorted by name.
  EXPECT_EQ((*variants)[0].name, "pulsar-sink8");
  EXPECT_EQ((*variants)[0].config.algorithm, "pulsar");
  EXPECT_EQ((*variants)[0].config.sink_tokens, 8);
  EXPECT_EQ((*variants)[0].config.scoring, "bm25");
  EXPECT_EQ((*variants)[0].config.boundary_overlap, 0);
  EXPECT_EQ((*variants)[1].name, "star-overlap64");
  EXPECT_EQ((*variants)[1].config.boundary_overlap, 64);
  EXPECT_EQ((*variants)[1].config.sink_tokens, AttentionConfig{}.sink_tokens);
}

TEST(EvalVariants, BadEntriesNameTheVariant) {
  expect_error_mentions(eval_variants_from_json(nlohmann::json::array(), {}).status(), {"JSON object", "array"});
  expect_error_mentions(
      eval_variants_from_json({{"ring-overlap", {{"algorithm", "ring"}, {"boundary_overlap", 8}}}}, {}).status(),
      {"variant \"ring-overlap\"", "boundary_overlap = 8", "not to ring"});
  expect_error_mentions(eval_variants_from_json({{"x", {{"anchor", 3}}}}, {}).status(),
                        {"variant \"x\"", "unknown key \"anchor\""});
  expect_error_mentions(eval_variants_from_json({{"star", {{"algorithm", "star"}}}}, {"dense", "star"}).status(),
                        {"variant \"star\"", "already an algorithm"});
  expect_error_mentions(eval_variants_from_json({{"a/b", nlohmann::json::object()}}, {}).status(),
                        {"variant \"a/b\"", "'/'"});
}

TEST(EvalVariants, FilesAreReadAndTheirErrorsNameThem) {
  const std::string path = ::testing::TempDir() + "star_eval_variants_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << R"({"no-anchor-overlap32": {"algorithm": "no-anchor", "boundary_overlap": 32}})";
  Result<std::vector<EvalVariant>> variants = load_eval_variants(path, {});
  ASSERT_TRUE(variants.ok()) << variants.status().to_string();
  EXPECT_EQ(variants->at(0).config.algorithm, "no-anchor");
  std::ofstream(path) << "{not json";
  expect_error_mentions(load_eval_variants(path, {}).status(), {path});
  std::remove(path.c_str());
  EXPECT_EQ(load_eval_variants(path, {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace star::eval
