#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "model/gguf_builder.h"
#include "model/test_files.h"
#include "model/weights_helpers.h"
#include "star/model/dtype.h"
#include "star/model/model_loader.h"
#include "star/quant/dequantize.h"
#include "support/test_paths.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using testing::GgufBuilder;
using testing::TempDir;

// A small Llama GGUF: dim 8, 2 layers, 2 heads / 1 KV head (head_dim 4), FFN 12, 6 tokens.
struct LlamaGguf {
  std::string architecture = "llama";
  uint32_t ggml_type = testing::kGgmlF32;
  enum class Output { kAbsent, kDistinct, kCopyOfEmbedding } output = Output::kDistinct;
  std::string skipped_tensor;        // left out of the file
  std::string skipped_key;           // left out of the metadata
  std::string mis_shaped_tensor;     // written with one row too many
  std::function<void(GgufBuilder&)> extra_metadata;
};

// Element i of tensor number `t`: small multiples of 1/16, exact in F32, F16 and BF16.
float element(int t, int64_t i) { return static_cast<float>((i * 7 + t * 3) % 17 - 8) / 16.0f; }

DType stored_dtype(uint32_t ggml_type) {
  return ggml_type == testing::kGgmlF32 ? DType::kF32 : ggml_type == testing::kGgmlF16 ? DType::kF16 : DType::kBF16;
}

std::string encode(int t, int64_t count, uint32_t ggml_type) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = element(t, i);
  if (ggml_type == testing::kGgmlF32) return testing::as_bytes(values);
  std::vector<uint16_t> halves;
  for (float v : values) halves.push_back(ggml_type == testing::kGgmlF16 ? f32_to_f16(v) : f32_to_bf16(v));
  return testing::as_bytes(halves);
}

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // row-major
};

std::vector<TensorSpec> llama_tensor_specs(bool with_output) {
  std::vector<TensorSpec> specs = {{"token_embd.weight", {6, 8}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    specs.push_back({p + "attn_norm.weight", {8}});
    specs.push_back({p + "attn_q.weight", {8, 8}});
    specs.push_back({p + "attn_k.weight", {4, 8}});
    specs.push_back({p + "attn_v.weight", {4, 8}});
    specs.push_back({p + "attn_output.weight", {8, 8}});
    specs.push_back({p + "ffn_norm.weight", {8}});
    specs.push_back({p + "ffn_gate.weight", {12, 8}});
    specs.push_back({p + "ffn_up.weight", {12, 8}});
    specs.push_back({p + "ffn_down.weight", {8, 12}});
  }
  specs.push_back({"output_norm.weight", {8}});
  if (with_output) specs.push_back({"output.weight", {6, 8}});
  return specs;
}

std::string build(const LlamaGguf& g) {
  GgufBuilder b;
  auto key = [&](const std::string& name) { return name != g.skipped_key; };
  if (key("general.architecture")) b.kv_string("general.architecture", g.architecture);
  const std::pair<const char*, uint32_t> sizes[] = {
      {"llama.embedding_length", 8}, {"llama.feed_forward_length", 12}, {"llama.block_count", 2},
      {"llama.attention.head_count", 2}, {"llama.attention.head_count_kv", 1}, {"llama.context_length", 256},
      {"llama.rope.dimension_count", 4}};
  for (const auto& [name, value] : sizes) {
    if (key(name)) b.kv<uint32_t>(name, testing::kU32, value);
  }
  if (key("llama.attention.layer_norm_rms_epsilon")) {
    b.kv<float>("llama.attention.layer_norm_rms_epsilon", testing::kF32, 1e-6f);
  }
  b.kv<float>("llama.rope.freq_base", testing::kF32, 500000.0f);
  if (key("tokenizer.ggml.model")) b.kv_string("tokenizer.ggml.model", "gpt2");
  if (key("tokenizer.ggml.tokens")) b.kv_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "b", "ab", "<eot>"});
  b.kv_array<float>("tokenizer.ggml.scores", testing::kF32, {0, 0, -1, -2, -3, 0});
  b.kv_array<int32_t>("tokenizer.ggml.token_type", testing::kI32, {3, 3, 1, 1, 1, 3});
  b.kv_strings("tokenizer.ggml.merges", {"a b"});
  b.kv<uint32_t>("tokenizer.ggml.bos_token_id", testing::kU32, 0);
  if (key("tokenizer.ggml.eos_token_id")) b.kv<uint32_t>("tokenizer.ggml.eos_token_id", testing::kU32, 1);
  b.kv<uint32_t>("tokenizer.ggml.eot_token_id", testing::kU32, 5);
  if (g.extra_metadata) g.extra_metadata(b);

  const auto specs = llama_tensor_specs(g.output != LlamaGguf::Output::kAbsent);
  for (size_t t = 0; t < specs.size(); ++t) {
    if (specs[t].name == g.skipped_tensor) continue;
    std::vector<int64_t> shape = specs[t].shape;
    if (specs[t].name == g.mis_shaped_tensor) ++shape[0];
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    const bool copy = specs[t].name == "output.weight" && g.output == LlamaGguf::Output::kCopyOfEmbedding;
    std::vector<uint64_t> ne(shape.rbegin(), shape.rend());  // GGUF: innermost first
    b.tensor(specs[t].name, ne, g.ggml_type, encode(copy ? 0 : static_cast<int>(t), count, g.ggml_type));
  }
  return b.build();
}

Result<LoadedModel> load(const TempDir& dir, const LlamaGguf& g) {
  testing::write_file(dir / "m.gguf", build(g));
  return load_model(dir / "m.gguf");
}

TEST(GgufLoader, ReadsConfigVocabularyAndWeights) {
  for (uint32_t type : {testing::kGgmlF32, testing::kGgmlF16, testing::kGgmlBF16}) {
    TempDir dir;
    LlamaGguf g;
    g.ggml_type = type;
    auto model = load(dir, g);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const LlamaConfig& c = model->config;
    EXPECT_EQ(c.dim, 8);
    EXPECT_EQ(c.hidden_dim, 12);
    EXPECT_EQ(c.n_layers, 2);
    EXPECT_EQ(c.n_heads, 2);
    EXPECT_EQ(c.n_kv_heads, 1);
    EXPECT_EQ(c.head_dim, 4);
    EXPECT_EQ(c.vocab_size, 6);
    EXPECT_EQ(c.max_position_embeddings, 256);
    EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, static_cast<double>(1e-6f));
    EXPECT_EQ(c.rope_layout, RopeLayout::kAdjacent);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.bos_token_id, 0);
    EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{1, 5}));

    ASSERT_TRUE(model->gguf_vocabulary.has_value());
    const GgufVocabulary& v = *model->gguf_vocabulary;
    EXPECT_EQ(v.model, "gpt2");
    EXPECT_EQ(v.tokens, (std::vector<std::string>{"<s>", "</s>", "a", "b", "ab", "<eot>"}));
    EXPECT_EQ(v.scores, (std::vector<float>{0, 0, -1, -2, -3, 0}));
    EXPECT_EQ(v.token_types, (std::vector<int32_t>{3, 3, 1, 1, 1, 3}));
    EXPECT_EQ(v.merges, (std::vector<std::string>{"a b"}));
    EXPECT_FALSE(v.add_space_prefix);  // absent, and not a SentencePiece vocabulary
    EXPECT_TRUE(model->tokenizer_json.empty());

    // Weights in file order match the generator, element by element, whatever the stored type.
    const auto specs = llama_tensor_specs(true);
    const auto tensors = testing::all_tensors(model->weights);
    const std::vector<std::string> order = {
        "embed", "layer0.attn_norm", "layer0.wq", "layer0.wk", "layer0.wv", "layer0.wo", "layer0.ffn_norm",
        "layer0.w_gate", "layer0.w_up", "layer0.w_down", "layer1.attn_norm", "layer1.wq", "layer1.wk", "layer1.wv",
        "layer1.wo", "layer1.ffn_norm", "layer1.w_gate", "layer1.w_up", "layer1.w_down", "final_norm", "lm_head"};
    ASSERT_EQ(tensors.size(), order.size());
    for (size_t t = 0; t < order.size(); ++t) {
      ASSERT_EQ(tensors[t].first, order[t]);
      const WeightTensor& w = *tensors[t].second;
      EXPECT_EQ(w.shape, specs[t].shape) << specs[t].name;
      // Matrices stay as stored, in the mapping; vectors (norms) become owned float32.
      const bool vector = w.shape.size() == 1;
      EXPECT_EQ(w.dtype, vector ? DType::kF32 : stored_dtype(type)) << specs[t].name;
      EXPECT_EQ(w.owned.empty(), !vector || type == testing::kGgmlF32) << specs[t].name;
      std::vector<float> values(static_cast<size_t>(w.numel()));
      quant::dequantize_rows(w.dtype, w.data, w.rows(), w.cols(), values.data());
      for (int64_t i = 0; i < w.numel(); ++i) {
        ASSERT_EQ(values[static_cast<size_t>(i)], element(static_cast<int>(t), i)) << specs[t].name;
      }
    }
  }
}

TEST(GgufLoader, ReadsPreTokenizerBosPolicyAndChatTemplate) {
  TempDir dir;
  LlamaGguf g;
  g.extra_metadata = [](GgufBuilder& b) {
    b.kv_string("tokenizer.ggml.pre", "smollm")
        .kv_bool("tokenizer.ggml.add_bos_token", false)
        .kv_string("tokenizer.chat_template", "{{ '<|im_start|>' }}");
  };
  auto model = load(dir, g);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const GgufVocabulary& v = *model->gguf_vocabulary;
  EXPECT_EQ(v.pre, "smollm");
  EXPECT_EQ(v.add_bos, false);
  EXPECT_EQ(v.eot_id, 5);
  EXPECT_EQ(v.chat_template, "{{ '<|im_start|>' }}");

  auto plain = load(dir, LlamaGguf{});
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->gguf_vocabulary->pre, "");
  EXPECT_FALSE(plain->gguf_vocabulary->add_bos.has_value());
  EXPECT_EQ(plain->gguf_vocabulary->chat_template, "");
}

TEST(GgufLoader, RopeFreqsBecomeFrequencyFactors) {
  TempDir dir;
  LlamaGguf g;
  g.extra_metadata = [](GgufBuilder& b) {
    b.tensor("rope_freqs.weight", {2}, testing::kGgmlF32, testing::as_bytes(std::vector<float>{1.0f, 4.5f}));
  };
  auto model = load(dir, g);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ(model->config.rope_scaling.type, RopeScaling::Type::kFreqFactors);
  EXPECT_EQ(model->config.rope_scaling.freq_factors, (std::vector<float>{1.0f, 4.5f}));
}

TEST(GgufLoader, OutputAbsentOrCopiedMeansTied) {
  for (auto output : {LlamaGguf::Output::kAbsent, LlamaGguf::Output::kCopyOfEmbedding}) {
    TempDir dir;
    LlamaGguf g;
    g.output = output;
    auto model = load(dir, g);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_TRUE(model->config.tie_word_embeddings);
    EXPECT_EQ(model->weights.lm_head.data, model->weights.embed.data);
    EXPECT_EQ(model->weights.lm_head.shape, (std::vector<int64_t>{6, 8}));
  }
}

struct BadGguf {
  const char* label;
  std::function<void(LlamaGguf&)> edit;
  StatusCode code;
  std::vector<std::string> mentions;
};

TEST(GgufLoader, BrokenModelsGiveNamedErrors) {
  const std::vector<BadGguf> cases = {
      {"gpt2", [](LlamaGguf& g) { g.architecture = "gpt2"; }, StatusCode::kInvalidArgument, {"architecture gpt2 is not Llama"}},
      {"mistral", [](LlamaGguf& g) { g.architecture = "mistral"; }, StatusCode::kInvalidArgument, {"mistral"}},
      {"no architecture", [](LlamaGguf& g) { g.skipped_key = "general.architecture"; }, StatusCode::kInvalidArgument,
       {"'general.architecture'"}},
      {"missing block count", [](LlamaGguf& g) { g.skipped_key = "llama.block_count"; }, StatusCode::kInvalidArgument,
       {"'llama.block_count'"}},
      {"missing eps", [](LlamaGguf& g) { g.skipped_key = "llama.attention.layer_norm_rms_epsilon"; },
       StatusCode::kInvalidArgument, {"'llama.attention.layer_norm_rms_epsilon'"}},
      {"missing tokens", [](LlamaGguf& g) { g.skipped_key = "tokenizer.ggml.tokens"; }, StatusCode::kInvalidArgument,
       {"'tokenizer.ggml.tokens'"}},
      {"missing tensor", [](LlamaGguf& g) { g.skipped_tensor = "blk.1.ffn_up.weight"; }, StatusCode::kNotFound,
       {"'blk.1.ffn_up.weight'"}},
      {"missing output norm", [](LlamaGguf& g) { g.skipped_tensor = "output_norm.weight"; }, StatusCode::kNotFound,
       {"'output_norm.weight'"}},
      {"shape mismatch", [](LlamaGguf& g) { g.mis_shaped_tensor = "blk.0.attn_k.weight"; }, StatusCode::kInvalidArgument,
       {"'blk.0.attn_k.weight'", "[5, 8]", "expected [4, 8]"}},
      {"yarn",
       [](LlamaGguf& g) { g.extra_metadata = [](GgufBuilder& b) { b.kv_string("llama.rope.scaling.type", "yarn"); }; },
       StatusCode::kUnimplemented, {"'yarn'"}},
      {"rope_freqs of the wrong length",
       [](LlamaGguf& g) {
         g.extra_metadata = [](GgufBuilder& b) { b.tensor("rope_freqs.weight", {3}, testing::kGgmlF32, std::string(12, '\0')); };
       },
       StatusCode::kInvalidArgument, {"'rope_freqs.weight'", "[3]", "expected F32 [2]"}},
      {"rope_freqs of zeros",
       [](LlamaGguf& g) {
         g.extra_metadata = [](GgufBuilder& b) { b.tensor("rope_freqs.weight", {2}, testing::kGgmlF32, std::string(8, '\0')); };
       },
       StatusCode::kInvalidArgument, {"rope frequency factor 0 is 0"}},
      {"partial rotary",
       [](LlamaGguf& g) {
         g.skipped_key = "llama.rope.dimension_count";
         g.extra_metadata = [](GgufBuilder& b) {
           b.kv<uint32_t>("llama.rope.dimension_count", testing::kU32, 2);
           b.kv<uint32_t>("llama.attention.key_length", testing::kU32, 4);
         };
       },
       StatusCode::kUnimplemented, {"llama.rope.dimension_count 2"}},
      {"eos out of range",
       [](LlamaGguf& g) {
         g.skipped_key = "tokenizer.ggml.eos_token_id";
         g.extra_metadata = [](GgufBuilder& b) { b.kv<uint32_t>("tokenizer.ggml.eos_token_id", testing::kU32, 99); };
       },
       StatusCode::kInvalidArgument, {"'tokenizer.ggml.eos_token_id'", "99"}},
      {"wrong key type",
       [](LlamaGguf& g) {
         g.skipped_key = "llama.context_length";
         g.extra_metadata = [](GgufBuilder& b) { b.kv_string("llama.context_length", "2048"); };
       },
       StatusCode::kInvalidArgument, {"'llama.context_length'", "string"}},
  };
  for (const BadGguf& c : cases) {
    TempDir dir;
    LlamaGguf g;
    c.edit(g);
    auto model = load(dir, g);
    ASSERT_FALSE(model.ok()) << c.label;
    EXPECT_EQ(model.status().code(), c.code) << c.label << ": " << model.status().to_string();
    EXPECT_THAT(model.status().message(), HasSubstr((dir / "m.gguf").string())) << c.label;
    for (const std::string& m : c.mentions) EXPECT_THAT(model.status().message(), HasSubstr(m)) << c.label;
  }
}

// stories260K.gguf against the llama2.c files of the same model, read here with their own layout.
struct Llama2cCheckpoint {
  int32_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  std::vector<float> weights;  // everything after the header
};

Llama2cCheckpoint read_llama2c(const std::filesystem::path& path) {
  const std::string raw = testing::read_file(path);
  Llama2cCheckpoint c{};
  std::memcpy(&c.dim, raw.data(), 7 * sizeof(int32_t));
  c.weights.resize((raw.size() - 28) / sizeof(float));
  std::memcpy(c.weights.data(), raw.data() + 28, c.weights.size() * sizeof(float));
  return c;
}

TEST(GgufLoader, Stories260KMatchesLlama2cCheckpoint) {
  STAR_REQUIRE_STORIES260K(dir);
  auto model = load_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const LlamaConfig& c = model->config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_NEAR(c.rms_norm_eps, 1e-5, 1e-12);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_layout, RopeLayout::kAdjacent);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kNone);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2}));

  const Llama2cCheckpoint ref = read_llama2c(dir / "stories260K.bin");
  ASSERT_EQ(ref.dim, c.dim);
  ASSERT_EQ(ref.hidden, c.hidden_dim);
  ASSERT_EQ(ref.layers, c.n_layers);
  ASSERT_EQ(ref.heads, c.n_heads);
  ASSERT_EQ(ref.kv_heads, c.n_kv_heads);
  ASSERT_EQ(ref.vocab, c.vocab_size);  // positive: shared classifier
  // llama2.c v0 order: embedding, then each kind of tensor for all layers, then the final norm.
  const LlamaWeights& w = model->weights;
  size_t offset = 0;
  auto expect_next = [&](const WeightTensor& t, const std::string& what) {
    ASSERT_LE(offset + t.numel(), ref.weights.size()) << what;
    ASSERT_EQ(std::memcmp(t.data, ref.weights.data() + offset, t.bytes()), 0) << what;
    offset += static_cast<size_t>(t.numel());
  };
  expect_next(w.embed, "embedding");
  using Member = WeightTensor LlamaLayerWeights::*;
  for (auto [member, what] : {std::pair<Member, const char*>{&LlamaLayerWeights::attn_norm, "attn_norm"},
                              {&LlamaLayerWeights::wq, "wq"}, {&LlamaLayerWeights::wk, "wk"},
                              {&LlamaLayerWeights::wv, "wv"}, {&LlamaLayerWeights::wo, "wo"},
                              {&LlamaLayerWeights::ffn_norm, "ffn_norm"}, {&LlamaLayerWeights::w_gate, "w1"},
                              {&LlamaLayerWeights::w_down, "w2"}, {&LlamaLayerWeights::w_up, "w3"}}) {
    for (int l = 0; l < 5; ++l) expect_next(w.layers[static_cast<size_t>(l)].*member, what + std::to_string(l));
  }
  expect_next(w.final_norm, "final norm");
  EXPECT_EQ(w.lm_head.data, w.embed.data);
  EXPECT_TRUE(w.embed.owned.empty());  // F32: borrowed from the mapping
}

TEST(GgufLoader, Stories260KVocabularyMatchesTok512) {
  STAR_REQUIRE_STORIES260K(dir);
  auto model = load_model(dir / "stories260K.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const GgufVocabulary& v = *model->gguf_vocabulary;
  EXPECT_EQ(v.model, "llama");
  ASSERT_EQ(v.tokens.size(), 512u);
  ASSERT_EQ(v.scores.size(), 512u);
  ASSERT_EQ(v.token_types.size(), 512u);
  EXPECT_EQ(v.tokens[0], "<unk>");
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.tokens[2], "</s>");
  EXPECT_EQ(v.tokens[3], "<0x00>");
  EXPECT_EQ(v.tokens[258], "<0xFF>");
  EXPECT_EQ(v.token_types[0], 2);  // unknown
  EXPECT_EQ(v.token_types[1], 3);  // control
  EXPECT_EQ(v.token_types[3], 6);  // byte
  EXPECT_EQ(v.bos_id, 1);
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_TRUE(v.add_space_prefix);

  // tok512.bin: i32 max_token_length, then per token f32 score, i32 length, bytes; "▁" is a space.
  const std::string raw = testing::read_file(dir / "tok512.bin");
  size_t pos = 4;
  for (size_t id = 0; id < 512; ++id) {
    float score;
    int32_t length;
    ASSERT_LE(pos + 8, raw.size());
    std::memcpy(&score, raw.data() + pos, 4);
    std::memcpy(&length, raw.data() + pos + 4, 4);
    ASSERT_LE(pos + 8 + static_cast<size_t>(length), raw.size());
    const std::string piece = raw.substr(pos + 8, static_cast<size_t>(length));
    pos += 8 + static_cast<size_t>(length);
    EXPECT_EQ(v.scores[id], score) << id;
    if (id >= 3) {  // llama2.c wraps <s> and </s> in newlines
      std::string token = v.tokens[id];
      for (size_t at; (at = token.find("\xe2\x96\x81")) != std::string::npos;) token.replace(at, 3, " ");
      EXPECT_EQ(token, piece) << id;
    }
  }
  EXPECT_EQ(pos, raw.size());
}

}  // namespace
}  // namespace star
