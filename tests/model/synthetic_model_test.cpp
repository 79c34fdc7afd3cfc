#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model/test_files.h"
#include "model/weights_helpers.h"
#include "star/model/model_loader.h"
#include "star/model/synthetic_model.h"
#include "star/model/synthetic_tokenizer.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::TempDir;

const char* const kModelFiles[] = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                                   "tokenizer_config.json"};

SyntheticModelSpec spec_for(const std::string& preset, uint64_t seed) {
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset(preset);
  spec.seed = seed;
  return spec;
}

TEST(SyntheticTokenizer, ByteLevelSymbolsAreGpt2s) {
  EXPECT_EQ(byte_level_symbol('a'), "a");
  EXPECT_EQ(byte_level_symbol('~'), "~");
  EXPECT_EQ(byte_level_symbol(' '), "\xc4\xa0");   // Ġ U+0120
  EXPECT_EQ(byte_level_symbol('\n'), "\xc4\x8a");  // Ċ U+010A
  EXPECT_EQ(byte_level_symbol(0x00), "\xc4\x80");  // Ā U+0100
  EXPECT_EQ(byte_level_symbol(0xad), "\xc5\x83");  // Ń U+0143
  EXPECT_EQ(byte_level_symbol(0xe9), "\xc3\xa9");  // é keeps its code point
  std::set<std::string> distinct;
  for (int b = 0; b < 256; ++b) distinct.insert(byte_level_symbol(static_cast<uint8_t>(b)));
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_EQ(byte_level_encode("a b"), "a\xc4\xa0" "b");
}

TEST(SyntheticTokenizer, TrainerMergesMostFrequentPairs) {
  // Pre-tokenized: "ab", " ab", " ab", " abc", " abc". Pair counts: (a,b) 5, (' ',a) 4, (b,c) 2.
  // After a+b: (' ',ab) 4, (ab,c) 2. After ' '+ab: (' ab',c) 2. Then nothing occurs twice.
  auto bpe = train_byte_level_bpe("ab ab ab abc abc", 10);
  ASSERT_TRUE(bpe.ok()) << bpe.status().to_string();
  ASSERT_EQ(bpe->vocab.size(), 259u);
  EXPECT_EQ(bpe->vocab[256], "ab");
  EXPECT_EQ(bpe->vocab[257], " ab");
  EXPECT_EQ(bpe->vocab[258], " abc");
  EXPECT_EQ(bpe->merges, (std::vector<std::pair<int32_t, int32_t>>{{'a', 'b'}, {' ', 256}, {257, 'c'}}));
  EXPECT_EQ(train_byte_level_bpe("ab ab ab abc abc", 1)->merges.size(), 1u);
  // Pieces "xy", " cd", " xy", " cd": three pairs occur twice; ties go to the pair whose strings sort first.
  auto tie = train_byte_level_bpe("xy cd xy cd", 1);
  EXPECT_EQ(tie->vocab[256], " c");  // (" ", "c") sorts before ("c", "d") and ("x", "y")
}

TEST(SyntheticTokenizer, TokenizerJsonIsLlama3Shaped) {
  auto t = make_synthetic_tokenizer(4096);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const auto& j = t->tokenizer_json;
  const auto& model = j["model"];
  EXPECT_EQ(model["type"], "BPE");
  EXPECT_EQ(model["ignore_merges"], true);
  const auto& vocab = model["vocab"];
  const auto& merges = model["merges"];
  EXPECT_GE(merges.size(), 200u);
  EXPECT_LE(merges.size(), static_cast<size_t>(kSyntheticMerges));
  std::set<int> ids;
  for (const auto& [token, id] : vocab.items()) ids.insert(id.get<int>());
  EXPECT_EQ(ids.size(), vocab.size());
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), static_cast<int>(vocab.size()) - 1);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(vocab[byte_level_symbol(static_cast<uint8_t>(b))], b);
  for (const auto& merge : merges) {
    const std::string m = merge.get<std::string>();
    const size_t space = m.find(' ');
    ASSERT_NE(space, std::string::npos);
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    EXPECT_TRUE(vocab.contains(left)) << m;
    EXPECT_TRUE(vocab.contains(right)) << m;
    EXPECT_TRUE(vocab.contains(left + right)) << m;
  }
  const auto& split = j["pre_tokenizer"]["pretokenizers"][0];
  EXPECT_EQ(split["type"], "Split");
  EXPECT_EQ(split["behavior"], "Isolated");
  EXPECT_EQ(split["pattern"]["Regex"],
            R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
  EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"][1]["type"], "ByteLevel");
  EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"][1]["use_regex"], false);
  EXPECT_EQ(j["decoder"]["type"], "ByteLevel");

  const std::vector<std::string> specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                             "<|end_header_id|>", "<|eot_id|>"};
  ASSERT_EQ(j["added_tokens"].size(), specials.size());
  for (size_t i = 0; i < specials.size(); ++i) {
    EXPECT_EQ(j["added_tokens"][i]["content"], specials[i]);
    EXPECT_EQ(j["added_tokens"][i]["id"], vocab.size() + i);
    EXPECT_EQ(j["added_tokens"][i]["special"], true);
  }
  EXPECT_EQ(t->size, static_cast<int32_t>(vocab.size() + specials.size()));
  EXPECT_EQ(t->begin_of_text_id, static_cast<int32_t>(vocab.size()));
  EXPECT_EQ(t->eot_id, static_cast<int32_t>(vocab.size() + 4));
  EXPECT_EQ(j["post_processor"]["processors"][1]["special_tokens"]["<|begin_of_text|>"]["ids"],
            json::array({t->begin_of_text_id}));
  EXPECT_EQ(t->tokenizer_config["bos_token"], "<|begin_of_text|>");
  EXPECT_EQ(t->tokenizer_config["eos_token"], "<|eot_id|>");
  EXPECT_THAT(t->tokenizer_config["chat_template"].get<std::string>(), HasSubstr("<|start_header_id|>"));
}

TEST(SyntheticModel, SameSeedSameBytesOtherSeedOtherWeights) {
  TempDir a, b, c;
  ASSERT_TRUE(write_synthetic_model(spec_for("tiny", 7), a.path()).ok());
  ASSERT_TRUE(write_synthetic_model(spec_for("tiny", 7), b.path()).ok());
  ASSERT_TRUE(write_synthetic_model(spec_for("tiny", 8), c.path()).ok());
  for (const char* name : kModelFiles) {
    const std::string bytes = testing::read_file(a / name);
    ASSERT_FALSE(bytes.empty()) << name;
    EXPECT_EQ(bytes, testing::read_file(b / name)) << name;
    if (std::string(name) == "model.safetensors") {
      EXPECT_NE(bytes, testing::read_file(c / name));
    } else {
      EXPECT_EQ(bytes, testing::read_file(c / name)) << name;
    }
  }
}

TEST(SyntheticModel, LoadsWithThePresetConfig) {
  for (const SyntheticPreset& preset : synthetic_presets()) {
    if (std::string(preset.name) == "small") continue;  // 400 MB: checked by parameter count below
    TempDir dir;
    SyntheticModelSpec spec = spec_for(preset.name, 1);
    spec.dtype = DType::kBF16;
    ASSERT_TRUE(write_synthetic_model(spec, dir.path()).ok()) << preset.name;
    auto model = load_model(dir.path());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const LlamaConfig& c = model->config;
    const LlamaConfig& p = preset.config;
    EXPECT_EQ(c.dim, p.dim);
    EXPECT_EQ(c.hidden_dim, p.hidden_dim);
    EXPECT_EQ(c.n_layers, p.n_layers);
    EXPECT_EQ(c.n_heads, p.n_heads);
    EXPECT_EQ(c.n_kv_heads, p.n_kv_heads);
    EXPECT_EQ(c.head_dim, p.head_dim);
    EXPECT_EQ(c.max_position_embeddings, p.max_position_embeddings);
    EXPECT_EQ(c.rope_theta, p.rope_theta);
    EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLlama3);
    EXPECT_EQ(c.rope_scaling.factor, p.rope_scaling.factor);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, p.rope_scaling.original_max_position_embeddings);
    EXPECT_TRUE(c.tie_word_embeddings);

    // Vocabulary and special ids come from the tokenizer that was written beside the weights.
    const json tokenizer = json::parse(testing::read_file(dir / "tokenizer.json"));
    const json& added = tokenizer["added_tokens"];
    EXPECT_EQ(c.vocab_size, tokenizer["model"]["vocab"].size() + added.size());
    auto id_of = [&](const std::string& content) {
      for (const json& t : added) {
        if (t["content"] == content) return t["id"].get<int32_t>();
      }
      return -1;
    };
    EXPECT_EQ(c.bos_token_id, id_of("<|begin_of_text|>"));
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{id_of("<|end_of_text|>"), id_of("<|eot_id|>")}));
  }
}

TEST(SyntheticModel, WeightScalesMatchTheDesign) {
  TempDir dir;
  SyntheticModelSpec spec = spec_for("tiny", 3);
  spec.config.tie_word_embeddings = false;
  ASSERT_TRUE(write_synthetic_model(spec, dir.path()).ok());
  auto model = load_model(dir.path());
  ASSERT_TRUE(model.ok());
  auto stats = [](const WeightTensor& t) {
    double sum = 0, sum_sq = 0;
    const std::vector<float> values = testing::values_of(t);
    for (float v : values) sum += v;
    const double mean = sum / static_cast<double>(t.numel());
    for (float v : values) sum_sq += (v - mean) * (v - mean);
    return std::pair{mean, std::sqrt(sum_sq / static_cast<double>(t.numel()))};
  };
  const LlamaWeights& w = model->weights;
  const double layers = 2;
  const struct {
    const WeightTensor* tensor;
    double mean, stddev;
  } expected[] = {
      {&w.embed, 0.0, 1.0 / 8.0},  // 1/sqrt(dim)
      {&w.lm_head, 0.0, 1.0 / 8.0},
      {&w.layers[0].wq, 0.0, 1.0 / 8.0},
      {&w.layers[1].w_up, 0.0, 1.0 / 8.0},
      {&w.layers[0].wo, 0.0, 1.0 / 8.0 / std::sqrt(2 * layers)},
      {&w.layers[1].w_down, 0.0, 1.0 / std::sqrt(172.0) / std::sqrt(2 * layers)},
      {&w.layers[0].attn_norm, 1.0, 0.02},
      {&w.final_norm, 1.0, 0.02},
  };
  for (const auto& e : expected) {
    auto [mean, stddev] = stats(*e.tensor);
    const double n = static_cast<double>(e.tensor->numel());
    EXPECT_NEAR(mean, e.mean, 4 * e.stddev / std::sqrt(n));
    EXPECT_NEAR(stddev, e.stddev, 4 * e.stddev / std::sqrt(2 * n)) << n;
  }
  EXPECT_NE(w.layers[0].wq.data[0], w.layers[1].wq.data[0]);  // every tensor draws its own stream
}

TEST(SyntheticModel, PresetsAndInvalidSpecs) {
  auto small = synthetic_model_config(spec_for("small", 0));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->parameter_count(), 100682496);  // what transformers counts for this config
  EXPECT_EQ(small->vocab_size, 32768);
  EXPECT_EQ(synthetic_preset("huge").status().code(), StatusCode::kNotFound);

  SyntheticModelSpec bad = spec_for("tiny", 0);
  bad.config.n_kv_heads = 3;
  TempDir dir;
  Status s = write_synthetic_model(bad, dir.path());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("num_key_value_heads 3"));
  EXPECT_FALSE(std::filesystem::exists(dir / "model.safetensors"));
}

}  // namespace
}  // namespace star
