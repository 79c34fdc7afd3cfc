// The algorithm registry: every entry plans, validates and costs; an unknown name is refused, by
// name, by everything that takes one; the lists users read (flag help, configs/, README) follow it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "star/attention/algorithm_registry.h"
#include "star/attention/attention_config_io.h"
#include "star/attention/cost_model.h"
#include "star/attention/plan_builder.h"
#include "star/eval/eval_matrix.h"
#include "support/test_paths.h"

namespace star {
namespace {

AttentionConfig config_for(std::string_view algorithm, int64_t block_size = 0) {
  AttentionConfig config;
  config.algorithm = std::string(algorithm);
  config.block_size = block_size;
  return config;
}

std::vector<int32_t> token_ids(int64_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(3 + (i * 7) % 50);
  return ids;
}

LlamaConfig tiny_model() {
  LlamaConfig model;
  model.dim = 64;
  model.hidden_dim = 172;
  model.n_layers = 5;
  model.n_heads = 8;
  model.n_kv_heads = 4;
  model.head_dim = 8;
  model.vocab_size = 512;
  return model;
}

void expect_mentions(const Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "\"" << part << "\" missing from: " << status.message();
  }
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const AlgorithmEntry& entry : algorithm_registry()) names.emplace_back(entry.name);
  return names;
}

TEST(AlgorithmRegistry, EveryEntryIsCompleteAndNamedOnce) {
  ASSERT_FALSE(algorithm_registry().empty());
  std::set<std::string_view> seen;
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    SCOPED_TRACE(std::string(entry.name));
    EXPECT_TRUE(seen.insert(entry.name).second) << "registered twice";
    EXPECT_FALSE(entry.help.empty());
    EXPECT_NE(entry.build_plan, nullptr);
    EXPECT_NE(entry.check_parameters, nullptr);
    EXPECT_NE(entry.phase1_work, nullptr);
    EXPECT_EQ(find_algorithm(entry.name), &entry);
  }
  EXPECT_EQ(find_algorithm("sparse"), nullptr);
  EXPECT_EQ(find_algorithm(""), nullptr);
}

TEST(AlgorithmRegistry, EveryBuilderPlansItsAlgorithmAndEveryCheckAcceptsTheDefaults) {
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    SCOPED_TRACE(std::string(entry.name));
    const AttentionConfig config = config_for(entry.name);
    EXPECT_TRUE(entry.check_parameters(config).ok());
    for (int ranks : {1, 3}) {
      Result<BlockPlan> plan = entry.build_plan(token_ids(200), ranks, config, {});
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_EQ(plan->algorithm, entry.name);
      EXPECT_EQ(plan->ranks.size(), static_cast<size_t>(ranks));
    }
  }
}

// A check refuses a bad value of a field its algorithm reads, and only those: the fields belong to
// one entry each, and validate_attention_config reaches all of them through the registry.
TEST(AlgorithmRegistry, ParameterChecksOwnTheirFields) {
  struct Owned {
    std::string_view algorithm;
    void (*spoil)(AttentionConfig&);
    const char* field;
  };
  const Owned cases[] = {
      {"star", [](AttentionConfig& c) { c.anchor_size = -5; }, "anchor_size"},
      {"pulsar", [](AttentionConfig& c) { c.chunk_tokens = 0; }, "chunk_tokens"},
      {"pulsar", [](AttentionConfig& c) { c.scoring = "idf"; }, "scoring"},
      {"streaming", [](AttentionConfig& c) { c.streaming_window = 0; }, "streaming_window"},
  };
  for (const Owned& owned : cases) {
    SCOPED_TRACE(owned.field);
    AttentionConfig config;
    owned.spoil(config);
    for (const AlgorithmEntry& entry : algorithm_registry()) {
      const Status status = entry.check_parameters(config);
      if (entry.name == owned.algorithm) {
        expect_mentions(status, {owned.field});
      } else {
        EXPECT_TRUE(status.ok()) << entry.name << " refused another algorithm's field: " << status.message();
      }
    }
    expect_mentions(validate_attention_config(config), {owned.field});
  }
}

// Every algorithm costs a nonzero pass, FLOPs, activations and KV on each shape, and its KV per rank
// is the largest shard its own plan gives a rank.
TEST(AlgorithmRegistry, EveryAlgorithmHasANonzeroCostThatMatchesItsPlansShards) {
  Result<LlamaConfig> llama = cost_model_preset("llama-3.1-8b");
  ASSERT_TRUE(llama.ok());
  struct Shape {
    int64_t context;
    int ranks;
    int64_t block_size;
  };
  const Shape shapes[] = {{1, 1, 0}, {777, 4, 0}, {4096, 2, 300}, {20000, 3, 0}};
  for (const LlamaConfig& model : {*llama, tiny_model()}) {
    for (const AlgorithmEntry& entry : algorithm_registry()) {
      for (const Shape& shape : shapes) {
        SCOPED_TRACE(std::string(entry.name) + " L=" + std::to_string(shape.context) +
                     " ranks=" + std::to_string(shape.ranks) + " dim=" + std::to_string(model.dim));
        const AttentionConfig config = config_for(entry.name, shape.block_size);
        Result<Phase1Cost> cost = phase1_cost(model, shape.context, shape.ranks, config);
        ASSERT_TRUE(cost.ok()) << cost.status().to_string();
        EXPECT_EQ(cost->algorithm, entry.name);
        EXPECT_GT(cost->critical_path_tokens, 0);
        EXPECT_GT(cost->attention_flops_per_layer, 0.0);
        EXPECT_GT(cost->activation_bytes_per_rank, 0);
        EXPECT_GT(cost->kv_bytes_per_rank, 0);

        Result<BlockPlan> plan = build_block_plan(token_ids(shape.context), shape.ranks, config);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        int64_t largest_shard = 0;
        for (const RankPlan& rank : plan->ranks) largest_shard = std::max(largest_shard, rank.shard.size());
        EXPECT_EQ(cost->kv_bytes_per_rank, largest_shard * kv_bytes_per_token(model));
      }
    }
  }
}

TEST(AlgorithmRegistry, UnknownNameIsRefusedByNameEverywhere) {
  const AttentionConfig sparse = config_for("sparse");
  std::vector<std::string> mentions = {"sparse"};
  for (const std::string& name : registered_names()) mentions.push_back(name);

  expect_mentions(validate_attention_config(sparse), mentions);
  expect_mentions(build_block_plan(token_ids(8), 1, sparse).status(), mentions);
  expect_mentions(phase1_cost(tiny_model(), 64, 2, sparse).status(), mentions);
  expect_mentions(attention_config_from_json({{"algorithm", "sparse"}}).status(), mentions);
  expect_mentions(eval::algorithm_config("sparse", AttentionConfig{}).status(), mentions);

  CLI::App app{"test"};
  AttentionConfig flags;
  std::string config_file;
  add_attention_options(app, flags, config_file);
  app.parse("--attention sparse", false);
  expect_mentions(resolve_attention_options(app, flags, config_file).status(), mentions);
}

TEST(AlgorithmRegistry, NamesAndFlagHelpListEveryEntry) {
  std::vector<std::string> names = registered_names();
  const std::string joined = std::accumulate(std::next(names.begin()), names.end(), names.front(),
                                             [](std::string a, const std::string& b) { return a + ", " + b; });
  EXPECT_EQ(algorithm_names(), joined);
  EXPECT_EQ(plan_algorithm_names().size(), names.size());

  CLI::App app{"test"};
  AttentionConfig flags;
  std::string config_file;
  add_attention_options(app, flags, config_file);
  const std::string help = app.get_option("--attention")->get_description();
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    EXPECT_NE(help.find("\n  " + std::string(entry.name) + ": " + std::string(entry.help)), std::string::npos)
        << entry.name << " missing from: " << help;
  }
}

// The exact algorithms come first in star-eval's matrix, every registered algorithm appears, and
// the blocked ones are the ones it cuts into blocks.
TEST(AlgorithmRegistry, EvalMatrixFollowsTheRegistry) {
  const std::vector<std::string> matrix = eval::default_algorithms();
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    SCOPED_TRACE(std::string(entry.name));
    const auto listed = std::find_if(matrix.begin(), matrix.end(), [&](const std::string& m) {
      return m == entry.name || m.starts_with(std::string(entry.name) + "-");
    });
    ASSERT_NE(listed, matrix.end());
    Result<AttentionConfig> config = eval::algorithm_config(*listed, AttentionConfig{});
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->algorithm, entry.name);
    EXPECT_EQ(eval::with_blocks(*config, 1000, 4).block_size, entry.blocked ? 250 : 0);
  }
  const auto first_approximate = std::find_if(matrix.begin(), matrix.end(), [](const std::string& m) {
    Result<AttentionConfig> c = eval::algorithm_config(m, AttentionConfig{});
    return c.ok() && !find_algorithm(c->algorithm)->exact;
  });
  for (auto it = first_approximate; it != matrix.end(); ++it) {
    Result<AttentionConfig> c = eval::algorithm_config(*it, AttentionConfig{});
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(find_algorithm(c->algorithm)->exact) << *it << " listed after an approximate algorithm";
  }
}

// configs/<name>.json and README's algorithm table cover every registered algorithm.
TEST(AlgorithmRegistry, ConfigsAndReadmeCoverEveryEntry) {
  std::ifstream readme_file(testing::source_dir() / "README.md");
  ASSERT_TRUE(readme_file);
  std::stringstream readme;
  readme << readme_file.rdbuf();
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    SCOPED_TRACE(std::string(entry.name));
    const std::filesystem::path config = testing::source_dir() / "configs" / (std::string(entry.name) + ".json");
    Result<AttentionConfig> loaded = load_attention_config(config);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(loaded->algorithm, entry.name);
    EXPECT_NE(readme.str().find("| `" + std::string(entry.name) + "`"), std::string::npos);
  }
}

}  // namespace
}  // namespace star
