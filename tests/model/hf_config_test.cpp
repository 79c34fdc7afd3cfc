#include "star/model/hf_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "model/test_files.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Llama-3.1-8B-Instruct's config.json, as published.
json llama31_8b() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

TEST(HfConfig, ParsesLlama31) {
  auto c = parse_hf_config(llama31_8b(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->dim, 4096);
  EXPECT_EQ(c->hidden_dim, 14336);
  EXPECT_EQ(c->n_layers, 32);
  EXPECT_EQ(c->n_heads, 32);
  EXPECT_EQ(c->n_kv_heads, 8);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->vocab_size, 128256);
  EXPECT_EQ(c->max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->rope_layout, RopeLayout::kHalf);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, 128000);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(c->parameter_count(), 8030261248);  // Llama-3.1-8B's published parameter count
}

TEST(HfConfig, DefaultsFollowTransformers) {
  json j = {{"model_type", "llama"}, {"hidden_size", 64}, {"intermediate_size", 172}, {"num_hidden_layers", 2},
            {"num_attention_heads", 4}, {"vocab_size", 100}, {"rope_scaling", nullptr}, {"bos_token_id", nullptr}};
  auto c = parse_hf_config(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kNone);
  EXPECT_EQ(c->bos_token_id, -1);                            // null: none
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2}));  // absent: transformers' default
  j["head_dim"] = 32;
  j["eos_token_id"] = 7;
  j["rope_scaling"] = {{"type", "default"}};
  c = parse_hf_config(j, "config.json");
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{7}));
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kNone);
  j["architectures"] = {"LlamaForCausalLM"};
  j.erase("model_type");
  EXPECT_TRUE(parse_hf_config(j, "config.json").ok());
}

TEST(HfConfig, GenerationConfigExtendsEos) {
  auto c = parse_hf_config(llama31_8b(), "config.json");
  json generation = {{"bos_token_id", 128000}, {"eos_token_id", {128009, 128255}}};
  ASSERT_TRUE(apply_generation_config(generation, "generation_config.json", *c).ok());
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009, 128255}));
  EXPECT_EQ(apply_generation_config({{"eos_token_id", "x"}}, "generation_config.json", *c).code(),
            StatusCode::kInvalidArgument);
}

TEST(HfConfig, RoundTripsThroughHfConfigJson) {
  auto c = parse_hf_config(llama31_8b(), "config.json");
  c->tie_word_embeddings = true;
  c->head_dim = 64;
  json written = hf_config_json(*c, DType::kBF16);
  EXPECT_EQ(written["torch_dtype"], "bfloat16");
  EXPECT_EQ(written["architectures"], json::array({"LlamaForCausalLM"}));
  auto back = parse_hf_config(written, "written");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->dim, c->dim);
  EXPECT_EQ(back->head_dim, 64);
  EXPECT_EQ(back->n_kv_heads, c->n_kv_heads);
  EXPECT_EQ(back->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_DOUBLE_EQ(back->rope_scaling.factor, 8.0);
  EXPECT_TRUE(back->tie_word_embeddings);
  EXPECT_EQ(back->eos_token_ids, c->eos_token_ids);
  EXPECT_EQ(back->bos_token_id, 128000);
}

struct BadConfig {
  const char* label;
  std::function<void(json&)> edit;
  StatusCode code;
  std::vector<std::string> mentions;
};

TEST(HfConfig, BadConfigsNameFileAndKey) {
  const std::vector<BadConfig> cases = {
      {"missing hidden_size", [](json& j) { j.erase("hidden_size"); }, StatusCode::kInvalidArgument, {"'hidden_size'"}},
      {"missing vocab_size", [](json& j) { j.erase("vocab_size"); }, StatusCode::kInvalidArgument, {"'vocab_size'"}},
      {"mistral",
       [](json& j) {
         j["model_type"] = "mistral";
         j["architectures"] = {"MistralForCausalLM"};
       },
       StatusCode::kInvalidArgument, {"architecture MistralForCausalLM is not Llama"}},
      {"gpt2",
       [](json& j) {
         j.erase("architectures");
         j["model_type"] = "gpt2";
       },
       StatusCode::kInvalidArgument, {"architecture gpt2 is not Llama"}},
      {"no architecture",
       [](json& j) {
         j.erase("architectures");
         j.erase("model_type");
       },
       StatusCode::kInvalidArgument, {"model_type"}},
      {"string layers", [](json& j) { j["num_hidden_layers"] = "32"; }, StatusCode::kInvalidArgument, {"'num_hidden_layers'"}},
      {"float heads", [](json& j) { j["num_attention_heads"] = 32.5; }, StatusCode::kInvalidArgument, {"'num_attention_heads'"}},
      {"yarn", [](json& j) { j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; }, StatusCode::kUnimplemented,
       {"'yarn'"}},
      {"llama3 without factor", [](json& j) { j["rope_scaling"].erase("factor"); }, StatusCode::kInvalidArgument,
       {"'factor'"}},
      {"eos list of strings", [](json& j) { j["eos_token_id"] = {"</s>"}; }, StatusCode::kInvalidArgument,
       {"'eos_token_id'"}},
      {"hidden not divisible", [](json& j) { j["hidden_size"] = 4100; }, StatusCode::kInvalidArgument,
       {"num_attention_heads"}},
  };
  for (const BadConfig& c : cases) {
    json j = llama31_8b();
    c.edit(j);
    auto config = parse_hf_config(j, "/models/x/config.json");
    ASSERT_FALSE(config.ok()) << c.label;
    EXPECT_EQ(config.status().code(), c.code) << c.label << ": " << config.status().to_string();
    EXPECT_THAT(config.status().message(), HasSubstr("/models/x/config.json")) << c.label;
    for (const std::string& m : c.mentions) EXPECT_THAT(config.status().message(), HasSubstr(m)) << c.label;
  }
}

TEST(HfConfig, LoadValidatesShapes) {
  testing::TempDir dir;
  json j = llama31_8b();
  j["num_key_value_heads"] = 5;  // 32 query heads cannot share 5 KV heads
  testing::write_file(dir / "config.json", j.dump());
  auto c = load_hf_config(dir.path());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("num_key_value_heads 5"));
  EXPECT_THAT(c.status().message(), HasSubstr((dir / "config.json").string()));

  j["num_key_value_heads"] = 8;
  testing::write_file(dir / "config.json", j.dump());
  testing::write_file(dir / "generation_config.json", R"({"eos_token_id": 128009, "bos_token_id": 128000})");
  c = load_hf_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->eos_token_ids.size(), 3u);

  testing::write_file(dir / "generation_config.json", "{not json");
  c = load_hf_config(dir.path());
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(c.status().message(), HasSubstr("generation_config.json"));

  testing::TempDir empty;
  EXPECT_EQ(load_hf_config(empty.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace star
