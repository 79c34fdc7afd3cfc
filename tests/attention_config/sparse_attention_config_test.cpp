// The sparse_attention section: JSON round trip for both algorithms, each bad field named with its
// range, keys of the other algorithm refused by name, the flags, and configs/sparse/*.json.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "star/attention/attention_config_io.h"
#include "star/attention/sparse_attention_config_io.h"
#include "support/test_paths.h"

namespace star {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void expect_error_mentions(const Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "\"" << part << "\" missing from: " << status.message();
  }
}

SparseAttentionConfig round_trip(const SparseAttentionConfig& config) {
  const Result<SparseAttentionConfig> back = sparse_attention_config_from_json(sparse_attention_config_to_json(config));
  EXPECT_TRUE(back.ok()) << back.status().to_string();
  return back.ok() ? *back : SparseAttentionConfig{};
}

TEST(SparseJson, DefaultIsNoneAndValid) {
  EXPECT_TRUE(validate_sparse_attention_config(SparseAttentionConfig{}).ok());
  EXPECT_EQ(sparse_attention_config_to_json(SparseAttentionConfig{}), json({{"algorithm", "none"}}));
  const Result<AttentionConfig> parsed = attention_config_from_json({{"algorithm", "dense"}});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->sparse, SparseAttentionConfig{});
}

TEST(SparseJson, RoundTripKeepsEveryField) {
  SparseAttentionConfig skip;
  skip.algorithm = "skip_softmax";
  skip.skip_softmax = {587.0, 16.5};
  EXPECT_EQ(round_trip(skip), skip);
  skip.skip_softmax = {1000.0, 1000.0};
  EXPECT_EQ(sparse_attention_config_to_json(skip).at("threshold_scale_factor"), 1000.0);
  EXPECT_EQ(round_trip(skip), skip);

  SparseAttentionConfig rocket;
  rocket.algorithm = "rocket";
  rocket.rocket = {512, 16, 31, 32, 64, 8};
  const json j = sparse_attention_config_to_json(rocket);
  EXPECT_EQ(j.size(), 7u);
  EXPECT_EQ(j.at("page_size"), 8);
  EXPECT_EQ(round_trip(rocket), rocket);

  // With a token budget the keys it derives stay out, and come back as the defaults they were.
  SparseAttentionConfig paper;
  paper.algorithm = "rocket";
  paper.rocket.token_budget = 256;
  paper.rocket.window_size = 16;
  EXPECT_EQ(sparse_attention_config_to_json(paper),
            json({{"algorithm", "rocket"}, {"token_budget", 256}, {"window_size", 16}, {"kernel_size", 63}}));
  EXPECT_EQ(round_trip(paper), paper);

  AttentionConfig whole;
  whole.algorithm = "pulsar";
  whole.sparse = rocket;
  const Result<AttentionConfig> back = attention_config_from_json(attention_config_to_json(whole));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->sparse, rocket);
}

TEST(SparseJson, ThresholdForms) {
  const Result<SparseAttentionConfig> one =
      sparse_attention_config_from_json({{"algorithm", "skip_softmax"}, {"threshold_scale_factor", 1000}});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->skip_softmax, (SkipSoftmaxConfig{1000.0, 1000.0}));
  const Result<SparseAttentionConfig> prefill_only = sparse_attention_config_from_json(
      {{"algorithm", "skip_softmax"}, {"threshold_scale_factor", {{"prefill", 587}}}});
  ASSERT_TRUE(prefill_only.ok());
  EXPECT_EQ(prefill_only->skip_softmax, (SkipSoftmaxConfig{587.0, 0.0}));  // an absent phase runs dense
  const Result<SparseAttentionConfig> absent = sparse_attention_config_from_json({{"algorithm", "skip_softmax"}});
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->skip_softmax, (SkipSoftmaxConfig{0.0, 0.0}));
}

TEST(SparseJson, RocketKeepsTensorRtDefaults) {
  const Result<SparseAttentionConfig> c = sparse_attention_config_from_json({{"algorithm", "rocket"}, {"topk", 16}});
  ASSERT_TRUE(c.ok());
  RocketConfig expected;
  expected.topk = 16;
  EXPECT_EQ(c->rocket, expected);
  EXPECT_EQ(expected.prompt_budget, 2048);
  EXPECT_EQ(expected.window_size, 32);
  EXPECT_EQ(expected.kernel_size, 63);
  EXPECT_EQ(expected.topr, 128);
  EXPECT_EQ(expected.page_size, 4);
}

struct BadSparse {
  json value;
  std::vector<std::string> mentions;  // the field, the value, the allowed range
};

TEST(SparseJson, EachBadFieldIsNamed) {
  const BadSparse cases[] = {
      {{{"algorithm", "dsa"}}, {"sparse_attention.algorithm", "\"dsa\"", "none, skip_softmax, rocket"}},
      {{{"algorithm", 3}}, {"sparse_attention.algorithm", "a string"}},
      {{{"algorithm", "skip_softmax"}, {"threshold_scale_factor", -1}},
       {"sparse_attention.threshold_scale_factor", "-1", ">= 0"}},
      {{{"algorithm", "skip_softmax"}, {"threshold_scale_factor", "1000"}},
       {"sparse_attention.threshold_scale_factor", "a number", "string"}},
      {{{"algorithm", "skip_softmax"}, {"threshold_scale_factor", {{"decode", -0.5}}}},
       {"sparse_attention.threshold_scale_factor.decode", "-0.5", ">= 0"}},
      {{{"algorithm", "skip_softmax"}, {"threshold_scale_factor", {{"generate", 5}}}},
       {"sparse_attention.threshold_scale_factor.generate", "prefill, decode"}},
      {{{"algorithm", "rocket"}, {"prompt_budget", 32}}, {"sparse_attention.prompt_budget: 32", ">= 33"}},
      {{{"algorithm", "rocket"}, {"window_size", 0}}, {"sparse_attention.window_size: 0", ">= 1"}},
      {{{"algorithm", "rocket"}, {"kernel_size", 64}}, {"sparse_attention.kernel_size", "64", "odd"}},
      {{{"algorithm", "rocket"}, {"kernel_size", -1}}, {"sparse_attention.kernel_size", "-1", ">= 1"}},
      {{{"algorithm", "rocket"}, {"topk", 0}}, {"sparse_attention.topk: 0", ">= 1"}},
      {{{"algorithm", "rocket"}, {"topr", 0}}, {"sparse_attention.topr: 0", ">= 1"}},
      {{{"algorithm", "rocket"}, {"page_size", 6}}, {"sparse_attention.page_size", "6", "power of two"}},
      {{{"algorithm", "rocket"}, {"page_size", 0}}, {"sparse_attention.page_size: 0", ">= 1"}},
      {{{"algorithm", "rocket"}, {"topk", 2.5}}, {"sparse_attention.topk", "an integer", "2.5"}},
      {{{"algorithm", "rocket"}, {"token_budget", 8}}, {"sparse_attention.token_budget", "8", "0 or >= 16"}},
      {{{"algorithm", "rocket"}, {"token_budget", -1}}, {"sparse_attention.token_budget: -1", ">= 0"}},
      // token_budget derives these four for each request, so a given one is refused by name.
      {{{"algorithm", "rocket"}, {"token_budget", 256}, {"prompt_budget", 1024}},
       {"sparse_attention.prompt_budget", "not with token_budget"}},
      {{{"algorithm", "rocket"}, {"topr", 32}, {"token_budget", 256}}, {"sparse_attention.topr", "not with token_budget"}},
      {{{"algorithm", "skip_softmax"}, {"token_budget", 256}},
       {"sparse_attention.token_budget", "rocket", "not skip_softmax"}},
      // The other algorithm's keys, and unknown ones, are refused by name.
      {{{"algorithm", "rocket"}, {"threshold_scale_factor", 10}},
       {"sparse_attention.threshold_scale_factor", "skip_softmax", "not rocket"}},
      {{{"algorithm", "skip_softmax"}, {"topk", 10}}, {"sparse_attention.topk", "rocket", "not skip_softmax"}},
      {{{"threshold_scale_factor", 10}}, {"sparse_attention.threshold_scale_factor", "not none"}},
      {{{"algorithm", "skip_softmax"}, {"threshold", 10}}, {"sparse_attention.threshold: unknown key"}},
      {json::array({1}), {"sparse_attention: ", "JSON object", "array"}},
  };
  for (const BadSparse& c : cases) {
    SCOPED_TRACE(c.value.dump());
    expect_error_mentions(sparse_attention_config_from_json(c.value).status(), c.mentions);
    // The same error through the whole attention config.
    expect_error_mentions(attention_config_from_json({{"sparse_attention", c.value}}).status(), c.mentions);
  }
}

TEST(SparseJson, ValidateCatchesSetFields) {
  AttentionConfig c;
  c.sparse.rocket.page_size = 3;
  expect_error_mentions(validate_attention_config(c), {"sparse_attention.page_size", "3"});
  c = AttentionConfig{};
  c.sparse.skip_softmax.prefill_scale_factor = -2;
  expect_error_mentions(validate_attention_config(c), {"sparse_attention.threshold_scale_factor.prefill", "-2"});
}

Result<AttentionConfig> resolve(const std::vector<std::string>& args) {
  CLI::App app{"test"};
  AttentionConfig flags;
  std::string config_file;
  add_attention_options(app, flags, config_file);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return resolve_attention_options(app, flags, config_file);
}

TEST(SparseCli, Flags) {
  const Result<AttentionConfig> json_flag = resolve(
      {"--sparse-attention", R"({"algorithm": "rocket", "prompt_budget": 512})"});
  ASSERT_TRUE(json_flag.ok()) << json_flag.status().to_string();
  EXPECT_EQ(json_flag->sparse.algorithm, "rocket");
  EXPECT_EQ(json_flag->sparse.rocket.prompt_budget, 512);

  const Result<AttentionConfig> both = resolve({"--skip-softmax-threshold", "1000"});
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  EXPECT_EQ(both->sparse.algorithm, "skip_softmax");
  EXPECT_EQ(both->sparse.skip_softmax, (SkipSoftmaxConfig{1000.0, 1000.0}));
  const Result<AttentionConfig> pair = resolve({"--skip-softmax-threshold", "587,16.5"});
  ASSERT_TRUE(pair.ok()) << pair.status().to_string();
  EXPECT_EQ(pair->sparse.skip_softmax, (SkipSoftmaxConfig{587.0, 16.5}));

  expect_error_mentions(resolve({"--skip-softmax-threshold", "many"}).status(), {"--skip-softmax-threshold", "\"many\""});
  expect_error_mentions(resolve({"--skip-softmax-threshold", "-3"}).status(),
                        {"sparse_attention.threshold_scale_factor.prefill", "-3"});
  expect_error_mentions(resolve({"--sparse-attention", "{oops"}).status(), {"--sparse-attention", "not JSON"});
  expect_error_mentions(resolve({"--sparse-attention", R"({"algorithm": "rocket", "topk": 0})"}).status(),
                        {"--sparse-attention", "sparse_attention.topk"});
  EXPECT_THROW(resolve({"--sparse-attention", R"({"algorithm": "none"})", "--skip-softmax-threshold", "5"}),
               CLI::ExcludesError);
}

// configs/sparse/<algorithm>.json: the documented examples parse and are named after their algorithm.
TEST(SparseConfigsFolder, ExamplesAreValid) {
  const fs::path folder = testing::source_dir() / "configs" / "sparse";
  std::vector<std::string> seen;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    SCOPED_TRACE(entry.path().string());
    const Result<AttentionConfig> config = load_attention_config(entry.path());
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    EXPECT_EQ(config->sparse.algorithm, entry.path().stem().string());
    seen.push_back(config->sparse.algorithm);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"rocket", "skip_softmax"}));
}

}  // namespace
}  // namespace star
