#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>

#include "model/test_files.h"
#include "model/weights_helpers.h"
#include "star/model/model_loader.h"
#include "star/model/safetensors.h"
#include "star/model/synthetic_model.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::TempDir;

void write_tiny(const std::filesystem::path& dir, DType dtype, bool tie = true) {
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.config.tie_word_embeddings = tie;
  spec.seed = 5;
  spec.dtype = dtype;
  ASSERT_TRUE(write_synthetic_model(spec, dir).ok());
}

void edit_config(const std::filesystem::path& dir, const std::function<void(json&)>& edit) {
  json j = json::parse(testing::read_file(dir / "config.json"));
  edit(j);
  testing::write_file(dir / "config.json", j.dump());
}

struct StoredTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<StoredTensor> read_all(const std::filesystem::path& file_path) {
  auto file = SafetensorsFile::open(file_path);
  std::vector<StoredTensor> out;
  for (const std::string& name : file->names()) {
    auto v = file->find(name);
    out.push_back({name, v->dtype, v->shape, std::string(reinterpret_cast<const char*>(v->data), v->bytes)});
  }
  return out;
}

void write_all(const std::filesystem::path& path, const std::vector<StoredTensor>& tensors) {
  std::vector<SafetensorsTensor> out;
  for (const StoredTensor& t : tensors) {
    out.push_back({t.name, t.dtype, t.shape, {reinterpret_cast<const std::byte*>(t.bytes.data()), t.bytes.size()}});
  }
  ASSERT_TRUE(write_safetensors(path, out).ok());
}

TEST(HfLoader, LoadsSyntheticModelZeroCopy) {
  TempDir dir;
  write_tiny(dir.path(), DType::kF32);
  auto model = load_model(dir.path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const LlamaConfig& c = model->config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.rope_layout, RopeLayout::kHalf);
  EXPECT_EQ(model->tokenizer_json, dir / "tokenizer.json");
  EXPECT_EQ(model->tokenizer_config["bos_token"], "<|begin_of_text|>");
  EXPECT_FALSE(model->gguf_vocabulary.has_value());
  ASSERT_EQ(model->weights.layers.size(), 2u);

  // Every tensor equals the stored bytes and borrows the mapping.
  const std::vector<StoredTensor> stored = read_all(dir / "model.safetensors");
  auto find = [&](const std::string& name) -> const StoredTensor& {
    for (const StoredTensor& t : stored) {
      if (t.name == name) return t;
    }
    ADD_FAILURE() << name;
    return stored.front();
  };
  const LlamaWeights& w = model->weights;
  const std::pair<const WeightTensor*, std::string> expected[] = {
      {&w.embed, "model.embed_tokens.weight"},
      {&w.final_norm, "model.norm.weight"},
      {&w.layers[1].wk, "model.layers.1.self_attn.k_proj.weight"},
      {&w.layers[0].w_down, "model.layers.0.mlp.down_proj.weight"},
      {&w.layers[1].ffn_norm, "model.layers.1.post_attention_layernorm.weight"}};
  for (const auto& [tensor, name] : expected) {
    const StoredTensor& s = find(name);
    EXPECT_EQ(tensor->shape, s.shape) << name;
    ASSERT_EQ(tensor->bytes(), s.bytes.size()) << name;
    EXPECT_EQ(std::memcmp(tensor->data, s.bytes.data(), s.bytes.size()), 0) << name;
    EXPECT_TRUE(tensor->owned.empty()) << name;
    EXPECT_NE(tensor->keep_alive, nullptr) << name;
  }
  EXPECT_EQ(w.lm_head.data, w.embed.data);  // tied
  EXPECT_EQ(w.lm_head.shape, w.embed.shape);
  int64_t total = 0;
  for (const auto& [name, t] : testing::all_tensors(w)) total += name == "lm_head" ? 0 : t->numel();
  EXPECT_EQ(total, c.parameter_count());

  // A borrowed tensor keeps the mapping alive after the model that loaded it is gone.
  WeightTensor embed;
  {
    LoadedModel owner = std::move(model).value();
    embed = owner.weights.embed;
  }
  EXPECT_EQ(std::memcmp(embed.data, find("model.embed_tokens.weight").bytes.data(), embed.bytes()), 0);
}

TEST(HfLoader, HalfPrecisionCheckpointsConvertWithinRounding) {
  TempDir f32_dir, bf16_dir, f16_dir;
  write_tiny(f32_dir.path(), DType::kF32, false);
  write_tiny(bf16_dir.path(), DType::kBF16, false);
  write_tiny(f16_dir.path(), DType::kF16, false);
  auto reference = load_model(f32_dir.path());
  ASSERT_TRUE(reference.ok());
  for (auto [dir, stored, relative_error] : {std::tuple{&bf16_dir, DType::kBF16, std::ldexp(1.0, -8)},
                                             std::tuple{&f16_dir, DType::kF16, std::ldexp(1.0, -11)}}) {
    auto model = load_model(dir->path());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const auto expected = testing::all_tensors(reference->weights);
    const auto actual = testing::all_tensors(model->weights);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t t = 0; t < expected.size(); ++t) {
      const WeightTensor& e = *expected[t].second;
      const WeightTensor& a = *actual[t].second;
      ASSERT_EQ(a.shape, e.shape) << expected[t].first;
      // Matrices keep their stored type in the mapping; the norm vectors are widened to float32.
      const bool vector = a.shape.size() == 1;
      EXPECT_EQ(a.owned.empty(), !vector) << expected[t].first;
      EXPECT_EQ(a.dtype, vector ? DType::kF32 : stored) << expected[t].first;
      std::vector<float> values(static_cast<size_t>(a.numel()));
      quant::dequantize_rows(a.dtype, a.data, a.rows(), a.cols(), values.data());
      const float* reference_values = e.f32();
      for (int64_t i = 0; i < e.numel(); ++i) {
        // Round to nearest: within half an ulp, at most 2^-8 (BF16) or 2^-11 (F16) of the value.
        ASSERT_LE(std::fabs(values[static_cast<size_t>(i)] - reference_values[i]),
                  std::fabs(reference_values[i]) * relative_error + 1e-7)
            << expected[t].first << "[" << i << "]";
      }
    }
    EXPECT_NE(model->weights.lm_head.data, model->weights.embed.data);  // untied
  }
}

TEST(HfLoader, ShardedCheckpointLoadsLikeOneFile) {
  TempDir single, sharded;
  write_tiny(single.path(), DType::kF32);
  write_tiny(sharded.path(), DType::kF32);
  std::vector<StoredTensor> all = read_all(sharded / "model.safetensors");
  std::filesystem::remove(sharded / "model.safetensors");
  std::vector<StoredTensor> first(all.begin(), all.begin() + all.size() / 2), second(all.begin() + all.size() / 2, all.end());
  write_all(sharded / "model-00001-of-00002.safetensors", first);
  write_all(sharded / "model-00002-of-00002.safetensors", second);
  json map = json::object();
  for (const StoredTensor& t : first) map[t.name] = "model-00001-of-00002.safetensors";
  for (const StoredTensor& t : second) map[t.name] = "model-00002-of-00002.safetensors";
  testing::write_file(sharded / "model.safetensors.index.json", json({{"weight_map", map}}).dump());

  auto a = load_model(single.path());
  auto b = load_model(sharded.path());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const auto ta = testing::all_tensors(a->weights), tb = testing::all_tensors(b->weights);
  for (size_t t = 0; t < ta.size(); ++t) {
    ASSERT_EQ(ta[t].second->shape, tb[t].second->shape);
    EXPECT_EQ(std::memcmp(ta[t].second->data, tb[t].second->data, ta[t].second->bytes()), 0) << ta[t].first;
  }
}

struct BadModel {
  const char* label;
  std::function<void(const std::filesystem::path&)> damage;
  StatusCode code;
  std::vector<std::string> mentions;
};

TEST(HfLoader, BrokenModelsGiveNamedErrors) {
  auto remove_tensor = [](const std::string& name) {
    return [name](const std::filesystem::path& dir) {
      std::vector<StoredTensor> all = read_all(dir / "model.safetensors");
      std::erase_if(all, [&](const StoredTensor& t) { return t.name == name; });
      write_all(dir / "model.safetensors", all);
    };
  };
  const std::vector<BadModel> cases = {
      {"missing config key", [](const auto& d) { edit_config(d, [](json& j) { j.erase("num_hidden_layers"); }); },
       StatusCode::kInvalidArgument, {"config.json", "'num_hidden_layers'"}},
      {"mistral",
       [](const auto& d) {
         edit_config(d, [](json& j) {
           j["model_type"] = "mistral";
           j["architectures"] = {"MistralForCausalLM"};
         });
       },
       StatusCode::kInvalidArgument, {"config.json", "MistralForCausalLM is not Llama"}},
      {"shape mismatch", [](const auto& d) { edit_config(d, [](json& j) { j["intermediate_size"] = 100; }); },
       StatusCode::kInvalidArgument,
       {"model.safetensors", "'model.layers.0.mlp.gate_proj.weight'", "[172, 64]", "expected [100, 64]"}},
      {"missing tensor", remove_tensor("model.layers.1.self_attn.v_proj.weight"), StatusCode::kNotFound,
       {"model.safetensors", "'model.layers.1.self_attn.v_proj.weight'"}},
      {"missing norm", remove_tensor("model.norm.weight"), StatusCode::kNotFound, {"'model.norm.weight'"}},
      {"untied without lm_head", [](const auto& d) { edit_config(d, [](json& j) { j["tie_word_embeddings"] = false; }); },
       StatusCode::kNotFound, {"model.safetensors", "'lm_head.weight'"}},
      {"gqa ratio", [](const auto& d) { edit_config(d, [](json& j) { j["num_key_value_heads"] = 3; }); },
       StatusCode::kInvalidArgument, {"config.json", "num_key_value_heads 3"}},
      {"truncated weights",
       [](const auto& d) {
         std::string bytes = testing::read_file(d / "model.safetensors");
         testing::write_file(d / "model.safetensors", bytes.substr(0, bytes.size() - 100));
       },
       StatusCode::kDataLoss, {"model.safetensors", "'model.norm.weight'", "truncated"}},
      {"no weights", [](const auto& d) { std::filesystem::remove(d / "model.safetensors"); }, StatusCode::kNotFound,
       {"model.safetensors"}},
      {"no config", [](const auto& d) { std::filesystem::remove(d / "config.json"); }, StatusCode::kNotFound,
       {"config.json"}},
      {"bad tokenizer_config", [](const auto& d) { testing::write_file(d / "tokenizer_config.json", "{"); },
       StatusCode::kDataLoss, {"tokenizer_config.json"}},
  };
  for (const BadModel& c : cases) {
    TempDir dir;
    write_tiny(dir.path(), DType::kF32);
    c.damage(dir.path());
    auto model = load_model(dir.path());
    ASSERT_FALSE(model.ok()) << c.label;
    EXPECT_EQ(model.status().code(), c.code) << c.label << ": " << model.status().to_string();
    EXPECT_THAT(model.status().message(), HasSubstr(dir.path().string())) << c.label;
    for (const std::string& m : c.mentions) EXPECT_THAT(model.status().message(), HasSubstr(m)) << c.label;
  }
}

TEST(HfLoader, MissingPathIsNotFound) {
  auto model = load_model("/nonexistent/model");
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("/nonexistent/model"));
}

}  // namespace
}  // namespace star
