// AttentionConfig: validation messages, JSON round trip and errors, configs/*.json, CLI flags.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "star/attention/attention_config_io.h"
#include "support/test_paths.h"

namespace star {
namespace {

namespace fs = std::filesystem;

void expect_same(const AttentionConfig& a, const AttentionConfig& b) {
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.anchor_size, b.anchor_size);
  EXPECT_EQ(a.anchor_positions, b.anchor_positions);
  EXPECT_EQ(a.boundary_overlap, b.boundary_overlap);
  EXPECT_EQ(a.boundary_snap, b.boundary_snap);
  EXPECT_EQ(a.sink_tokens, b.sink_tokens);
  EXPECT_EQ(a.chunk_tokens, b.chunk_tokens);
  EXPECT_EQ(a.summary_fraction, b.summary_fraction);
  EXPECT_EQ(a.summary_chunks, b.summary_chunks);
  EXPECT_EQ(a.scoring, b.scoring);
  EXPECT_EQ(a.position_mode, b.position_mode);
  EXPECT_EQ(a.keep_prefix_kv, b.keep_prefix_kv);
  EXPECT_EQ(a.streaming_sink, b.streaming_sink);
  EXPECT_EQ(a.streaming_window, b.streaming_window);
  EXPECT_EQ(a.sparse, b.sparse);
}

void expect_error_mentions(const Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "\"" << part << "\" missing from: " << status.message();
  }
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("star_attention_config_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(Validate, DefaultsAreValid) { EXPECT_TRUE(validate_attention_config(AttentionConfig{}).ok()); }

struct BadField {
  const char* name;
  void (*spoil)(AttentionConfig&);
  std::vector<std::string> mentions;  // field, value, allowed range or set
};

TEST(Validate, EachFieldNamesItsValueAndRange) {
  const BadField cases[] = {
      {"algorithm", [](AttentionConfig& c) { c.algorithm = "sparse"; }, {"algorithm", "\"sparse\"", "pulsar", "no-anchor"}},
      {"block_size", [](AttentionConfig& c) { c.block_size = -4; }, {"block_size", "-4", "[0, 2147483647]"}},
      {"anchor_size", [](AttentionConfig& c) { c.anchor_size = -2; }, {"anchor_size", "-2", "[-1, 2147483647]"}},
      {"boundary_overlap", [](AttentionConfig& c) { c.boundary_overlap = -1; }, {"boundary_overlap", "-1", "[0, 2147483647]"}},
      {"boundary_overlap on ring", [](AttentionConfig& c) { c.algorithm = "ring"; c.boundary_overlap = 8; },
       {"boundary_overlap = 8", "star, no-anchor, pulsar", "not to ring"}},
      {"boundary_overlap on dense", [](AttentionConfig& c) { c.algorithm = "dense"; c.boundary_overlap = 1; },
       {"boundary_overlap = 1", "not to dense"}},
      {"boundary_snap", [](AttentionConfig& c) { c.boundary_snap = -2; }, {"boundary_snap", "-2", "[0, 2147483647]"}},
      {"boundary_snap on ring", [](AttentionConfig& c) { c.algorithm = "ring"; c.boundary_snap = 16; },
       {"boundary_snap = 16", "star, no-anchor, pulsar", "not to ring"}},
      {"boundary_snap on streaming", [](AttentionConfig& c) { c.algorithm = "streaming"; c.boundary_snap = 4; },
       {"boundary_snap = 4", "not to streaming"}},
      {"sink_tokens", [](AttentionConfig& c) { c.sink_tokens = -1; }, {"sink_tokens", "-1", "[0, 2147483647]"}},
      {"chunk_tokens", [](AttentionConfig& c) { c.chunk_tokens = 0; }, {"chunk_tokens", "= 0", "[1, 2147483647]"}},
      {"summary_fraction", [](AttentionConfig& c) { c.summary_fraction = 1.5; }, {"summary_fraction", "1.5", "[0, 1]"}},
      {"summary_chunks", [](AttentionConfig& c) { c.summary_chunks = -3; }, {"summary_chunks", "-3", "[0, 2147483647]"}},
      {"scoring", [](AttentionConfig& c) { c.scoring = "idf"; }, {"scoring", "\"idf\"", "max_idf", "bm25", "even"}},
      {"position_mode", [](AttentionConfig& c) { c.position_mode = "dense"; }, {"position_mode", "\"dense\"", "sparse, contiguous"}},
      {"anchor_positions", [](AttentionConfig& c) { c.anchor_positions = "last"; },
       {"anchor_positions", "\"last\"", "first, adjacent"}},
      {"streaming_sink", [](AttentionConfig& c) { c.streaming_sink = -7; }, {"streaming_sink", "-7", "[0, 2147483647]"}},
      {"streaming_window", [](AttentionConfig& c) { c.streaming_window = 0; }, {"streaming_window", "= 0", "[1, 2147483647]"}},
      {"block_size too large", [](AttentionConfig& c) { c.block_size = int64_t{1} << 40; }, {"block_size", "1099511627776"}},
      {"anchor beyond block", [](AttentionConfig& c) { c.block_size = 100; c.anchor_size = 101; },
       {"anchor_size = 101", "block_size = 100"}},
  };
  for (const BadField& bad : cases) {
    SCOPED_TRACE(bad.name);
    AttentionConfig config;
    bad.spoil(config);
    expect_error_mentions(validate_attention_config(config), bad.mentions);
  }
  AttentionConfig nan_fraction;
  nan_fraction.summary_fraction = std::nan("");
  expect_error_mentions(validate_attention_config(nan_fraction), {"summary_fraction", "nan"});
}

TEST(Json, RoundTripKeepsEveryField) {
  AttentionConfig config;
  config.algorithm = "pulsar";
  config.block_size = 4096;
  config.anchor_size = 2048;
  config.anchor_positions = "adjacent";
  config.boundary_overlap = 32;
  config.boundary_snap = 24;
  config.sink_tokens = 16;
  config.chunk_tokens = 64;
  config.summary_fraction = 0.3;
  config.summary_chunks = 5;
  config.scoring = "bm25";
  config.position_mode = "contiguous";
  config.keep_prefix_kv = true;
  config.streaming_sink = 4;
  config.streaming_window = 1024;
  config.sparse.algorithm = "skip_softmax";
  config.sparse.skip_softmax = {1000.0, 500.0};
  const nlohmann::json json = attention_config_to_json(config);
  EXPECT_EQ(json.size(), 16u);
  EXPECT_EQ(json.at("sparse_attention").at("threshold_scale_factor").at("decode"), 500.0);
  EXPECT_EQ(json.at("boundary_overlap"), 32);
  EXPECT_EQ(json.at("boundary_snap"), 24);
  EXPECT_EQ(json.at("sink_tokens"), 16);
  EXPECT_EQ(json.at("position_mode"), "contiguous");
  EXPECT_EQ(json.at("anchor_positions"), "adjacent");
  const Result<AttentionConfig> back = attention_config_from_json(json);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same(*back, config);
}

TEST(Json, MissingKeysKeepDefaults) {
  const Result<AttentionConfig> config = attention_config_from_json({{"algorithm", "ring"}});
  ASSERT_TRUE(config.ok());
  AttentionConfig expected;
  expected.algorithm = "ring";
  expect_same(*config, expected);
}

TEST(Json, UnknownKeysAndWrongTypesAreNamed) {
  expect_error_mentions(attention_config_from_json({{"algorithm", "star"}, {"anchor", 5}}).status(),
                        {"unknown key \"anchor\"", "anchor_size"});
  expect_error_mentions(attention_config_from_json({{"block_size", "4096"}}).status(),
                        {"\"block_size\"", "an integer", "string"});
  expect_error_mentions(attention_config_from_json({{"block_size", 3.5}}).status(), {"\"block_size\"", "an integer", "3.5"});
  expect_error_mentions(attention_config_from_json({{"summary_fraction", true}}).status(),
                        {"\"summary_fraction\"", "a number", "boolean"});
  expect_error_mentions(attention_config_from_json({{"keep_prefix_kv", 1}}).status(),
                        {"\"keep_prefix_kv\"", "true or false"});
  expect_error_mentions(attention_config_from_json({{"scoring", 3}}).status(), {"\"scoring\"", "a string"});
  expect_error_mentions(attention_config_from_json({{"chunk_tokens", 18446744073709551615ull}}).status(),
                        {"\"chunk_tokens\"", "64-bit"});
  expect_error_mentions(attention_config_from_json(nlohmann::json::array({1, 2})).status(), {"JSON object", "array"});
  // Values of the right type still go through validation.
  expect_error_mentions(attention_config_from_json({{"chunk_tokens", 0}}).status(), {"chunk_tokens", "[1, "});
}

TEST(Json, IntegralFractionIsANumber) {
  const Result<AttentionConfig> config = attention_config_from_json({{"summary_fraction", 1}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->summary_fraction, 1.0);
}

TEST(Load, FileErrorsNameThePath) {
  const Result<AttentionConfig> missing = load_attention_config("/nonexistent/attention.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/attention.json"), std::string::npos);

  const fs::path broken = write_temp("broken.json", "{\"algorithm\": ");
  expect_error_mentions(load_attention_config(broken).status(), {broken.string(), "parse"});
  const fs::path bad_value = write_temp("bad_value.json", R"({"algorithm": "pulsar", "scoring": "rare"})");
  expect_error_mentions(load_attention_config(bad_value).status(), {bad_value.string(), "scoring", "\"rare\""});
  fs::remove(broken);
  fs::remove(bad_value);
}

// configs/<algorithm>.json: valid, named after its algorithm, and holding the defaults.
TEST(ConfigsFolder, EveryFileIsValidAndHoldsTheDefaults) {
  const fs::path folder = testing::source_dir() / "configs";
  std::vector<std::string> algorithms;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const Result<AttentionConfig> config = load_attention_config(entry.path());
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    EXPECT_EQ(config->algorithm, entry.path().stem().string());
    AttentionConfig defaults;
    defaults.algorithm = config->algorithm;
    expect_same(*config, defaults);
    algorithms.push_back(config->algorithm);
  }
  std::sort(algorithms.begin(), algorithms.end());
  EXPECT_EQ(algorithms, (std::vector<std::string>{"dense", "no-anchor", "pulsar", "ring", "star", "streaming"}));
}

// Parses a command line with the shared attention options and resolves it.
Result<AttentionConfig> resolve(const std::string& command_line) {
  CLI::App app{"test"};
  AttentionConfig flags;
  std::string config_file;
  add_attention_options(app, flags, config_file);
  app.parse(command_line, false);
  return resolve_attention_options(app, flags, config_file);
}

TEST(Cli, NoOptionsGiveTheDefaults) {
  const Result<AttentionConfig> config = resolve("");
  ASSERT_TRUE(config.ok());
  expect_same(*config, AttentionConfig{});
}

TEST(Cli, EveryFieldHasAFlag) {
  const Result<AttentionConfig> config = resolve(
      "--attention pulsar --block-size 512 --anchor-size 256 --sink-tokens 8 --chunk-tokens 16 "
      "--summary-fraction 0.25 --scoring entropy --position-mode contiguous --keep-prefix-kv "
      "--streaming-sink 3 --streaming-window 99");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  AttentionConfig expected;
  expected.algorithm = "pulsar";
  expected.block_size = 512;
  expected.anchor_size = 256;
  expected.sink_tokens = 8;
  expected.chunk_tokens = 16;
  expected.summary_fraction = 0.25;
  expected.scoring = "entropy";
  expected.position_mode = "contiguous";
  expected.keep_prefix_kv = true;
  expected.streaming_sink = 3;
  expected.streaming_window = 99;
  expect_same(*config, expected);
}

TEST(Cli, FlagsOverrideTheFile) {
  const fs::path file = write_temp(
      "override.json",
      R"({"algorithm": "pulsar", "sink_tokens": 16, "chunk_tokens": 64, "summary_chunks": 3, "keep_prefix_kv": true})");
  {
    const Result<AttentionConfig> config = resolve("--attention-config " + file.string() + " --sink-tokens 8");
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    EXPECT_EQ(config->algorithm, "pulsar");  // from the file
    EXPECT_EQ(config->sink_tokens, 8);       // flag wins
    EXPECT_EQ(config->summary_chunks, 3);
    EXPECT_TRUE(config->keep_prefix_kv);
  }
  {
    const Result<AttentionConfig> config = resolve("--attention-config " + file.string() + " --keep-prefix-kv=false");
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    EXPECT_FALSE(config->keep_prefix_kv);
  }
  {  // --summary-tokens divides by the file's chunk size
    const Result<AttentionConfig> config = resolve("--attention-config " + file.string() + " --summary-tokens 512");
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->summary_chunks, 8);
  }
  {  // --summary-fraction drops the file's explicit chunk count, so the fraction applies
    const Result<AttentionConfig> config = resolve("--attention-config " + file.string() + " --summary-fraction 0.2");
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->summary_chunks, 0);
    EXPECT_EQ(config->summary_fraction, 0.2);
  }
  fs::remove(file);
}

TEST(Cli, SummaryTokens) {
  const Result<AttentionConfig> paper = resolve("--attention pulsar --summary-tokens 512");
  ASSERT_TRUE(paper.ok());
  EXPECT_EQ(paper->summary_chunks, 16);
  const Result<AttentionConfig> wider = resolve("--summary-tokens 512 --chunk-tokens 128");
  ASSERT_TRUE(wider.ok());
  EXPECT_EQ(wider->summary_chunks, 4);
  const Result<AttentionConfig> none = resolve("--summary-tokens 0");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->summary_chunks, 0);
  EXPECT_EQ(none->summary_fraction, 0.0);
  expect_error_mentions(resolve("--summary-tokens 500").status(), {"--summary-tokens = 500", "chunk_tokens = 32"});
  expect_error_mentions(resolve("--summary-tokens lots").status(), {"--summary-tokens", "\"lots\""});
  EXPECT_THROW(resolve("--summary-tokens 64 --summary-fraction 0.1"), CLI::ExcludesError);
}

TEST(Cli, FlagValuesAreValidated) {
  expect_error_mentions(resolve("--position-mode wide").status(), {"position_mode", "\"wide\""});
  expect_error_mentions(resolve("--block-size 10 --anchor-size 20").status(), {"anchor_size = 20"});
  expect_error_mentions(resolve("--attention-config /nonexistent.json").status(), {"/nonexistent.json"});
  EXPECT_THROW(resolve("--block-size many"), CLI::ConversionError);
}

}  // namespace
}  // namespace star
