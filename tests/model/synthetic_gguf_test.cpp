// star-mkmodel's GGUF output checked against its HF output of the same seed, loaded by the HF
// loader: every file type parses, every tensor dequantizes to within its type's error bound of
// the HF weights (Q/K rows permuted into the adjacent-pair order by a reference written here).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "model/test_files.h"
#include "model/weights_helpers.h"
#include "quant/error_bounds.h"
#include "star/model/gguf.h"
#include "star/model/model_loader.h"
#include "star/model/synthetic_gguf.h"
#include "star/model/synthetic_model.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

SyntheticModelSpec tiny_spec() {
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.seed = 7;
  return spec;
}

// Rows of 256 and 512: the K-quants are used as such, not through their fallbacks.
SyntheticModelSpec wide_spec() {
  SyntheticModelSpec spec = tiny_spec();
  spec.config.dim = 256;
  spec.config.hidden_dim = 512;
  spec.config.head_dim = 64;
  spec.config.rope_scaling = RopeScaling{};
  return spec;
}

// convert_hf_to_gguf.py's permute, as numpy spells it: rows of a head reshaped [2, d/2],
// swapped to [d/2, 2].
std::vector<float> half_to_adjacent(const WeightTensor& w, int64_t heads) {
  const int64_t rows = w.shape[0], cols = w.shape[1], d = rows / heads;
  const std::vector<float> values = testing::values_of(w);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t half = 0; half < 2; ++half) {
      for (int64_t i = 0; i < d / 2; ++i) {
        std::copy_n(values.data() + (h * d + half * (d / 2) + i) * cols, cols, out.data() + (h * d + 2 * i + half) * cols);
      }
    }
  }
  return out;
}

// name in the GGUF file -> the HF model's weights in GGUF's stored order.
std::map<std::string, std::vector<float>> hf_weights_by_gguf_name(const LoadedModel& hf) {
  const LlamaConfig& c = hf.config;
  auto values = [](const WeightTensor& w) { return testing::values_of(w); };
  std::map<std::string, std::vector<float>> out;
  out["token_embd.weight"] = values(hf.weights.embed);
  out["output_norm.weight"] = values(hf.weights.final_norm);
  if (!c.tie_word_embeddings) out["output.weight"] = values(hf.weights.lm_head);
  const std::pair<const char*, WeightTensor LlamaLayerWeights::*> members[] = {
      {"attn_norm", &LlamaLayerWeights::attn_norm}, {"attn_v", &LlamaLayerWeights::wv},
      {"attn_output", &LlamaLayerWeights::wo},      {"ffn_norm", &LlamaLayerWeights::ffn_norm},
      {"ffn_gate", &LlamaLayerWeights::w_gate},     {"ffn_up", &LlamaLayerWeights::w_up},
      {"ffn_down", &LlamaLayerWeights::w_down}};
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& layer = hf.weights.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const auto& [name, member] : members) out[p + name + ".weight"] = values(layer.*member);
    out[p + "attn_q.weight"] = half_to_adjacent(layer.wq, c.n_heads);
    out[p + "attn_k.weight"] = half_to_adjacent(layer.wk, c.n_kv_heads);
  }
  return out;
}

// The expected value of a plain type: the float rounded to it and back.
float plain_round_trip(DType dtype, float x) {
  if (dtype == DType::kF16) return f16_to_f32(f32_to_f16(x));
  if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(x));
  return x;
}

void expect_tensor_near(const GgufTensorInfo& info, const std::vector<float>& actual, const std::vector<float>& expected,
                        const std::string& file_type) {
  ASSERT_EQ(actual.size(), expected.size()) << file_type << " " << info.name;
  const int64_t block = std::max<int64_t>(dtype_block_elements(info.dtype), 1);
  int failures = 0;
  for (size_t start = 0; start < expected.size() && failures < 5; start += static_cast<size_t>(block)) {
    const double bound = testing::block_error_bound(info.dtype, expected.data() + start, block);
    for (size_t i = start; i < start + static_cast<size_t>(block); ++i) {
      const double want = dtype_is_quantized(info.dtype) ? expected[i] : plain_round_trip(info.dtype, expected[i]);
      if (std::fabs(actual[i] - want) > bound) {
        ADD_FAILURE() << file_type << " " << info.name << " (" << dtype_name(info.dtype) << ") element " << i
                      << ": " << actual[i] << " vs " << want << ", bound " << bound;
        ++failures;
      }
    }
  }
}

void check_every_file_type(const SyntheticModelSpec& spec) {
  TempDir dir;
  SyntheticModelSpec hf_spec = spec;
  hf_spec.dtype = DType::kF32;
  ASSERT_TRUE(write_synthetic_model(hf_spec, dir / "hf").ok());
  auto hf = load_model(dir / "hf");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  const std::map<std::string, std::vector<float>> expected = hf_weights_by_gguf_name(*hf);

  for (const GgufFileType& type : gguf_file_types()) {
    const std::filesystem::path path = dir / (std::string(type.name) + ".gguf");
    ASSERT_TRUE(write_synthetic_gguf(spec, type, path).ok()) << type.name;
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << type.name << ": " << file.status().to_string();
    EXPECT_EQ(*file->get_int("general.file_type"), type.llama_ftype) << type.name;
    size_t weights = 0;
    for (const GgufTensorInfo& info : file->tensors()) {
      if (info.name == "rope_freqs.weight") continue;
      ++weights;
      auto want = expected.find(info.name);
      ASSERT_NE(want, expected.end()) << type.name << ": unexpected tensor " << info.name;
      EXPECT_EQ(info.dtype == DType::kF32, info.shape.size() == 1 || type.base == DType::kF32)
          << type.name << " " << info.name << " is " << dtype_name(info.dtype);
      auto view = file->find_tensor(info.name);
      ASSERT_TRUE(view.ok());
      const int64_t k = info.shape.back();
      const int64_t rows = view->numel() / k;
      std::vector<float> actual(static_cast<size_t>(view->numel()));
      quant::dequantize_rows(info.dtype, view->data, rows, k, actual.data());
      expect_tensor_near(info, actual, want->second, type.name);
    }
    EXPECT_EQ(weights, expected.size()) << type.name;
  }
}

TEST(SyntheticGguf, EveryFileTypeHoldsTheSeedsWeightsWithinItsBound) {
  check_every_file_type(wide_spec());
}

// The tiny preset's rows of 64 and 172 take the fallbacks, and its llama3 rope adds rope_freqs.
TEST(SyntheticGguf, FallbackTypesHoldTheSeedsWeightsWithinTheirBound) {
  check_every_file_type(tiny_spec());
}

TEST(SyntheticGguf, TensorTypesFollowLlamaCppsRules) {
  const GgufFileType q4_k_m = *gguf_file_type("q4_k_m");
  const GgufFileType q5_k_m = *gguf_file_type("q5_k_m");
  const GgufFileType q8_0 = *gguf_file_type("q8_0");
  const GgufFileType q4_0 = *gguf_file_type("q4_0");
  const std::vector<int64_t> square = {256, 256}, narrow = {256, 64}, odd = {64, 172};
  // use_more_bits over 8 layers: 0, 3, 6, 7.
  std::vector<int64_t> six_bit_layers;
  for (int64_t l = 0; l < 8; ++l) {
    if (gguf_tensor_type(q4_k_m, "blk." + std::to_string(l) + ".attn_v.weight", square, 8, true) == DType::kQ6_K) {
      six_bit_layers.push_back(l);
    }
    EXPECT_EQ(gguf_tensor_type(q5_k_m, "blk." + std::to_string(l) + ".ffn_down.weight", square, 8, true),
              l == 0 || l == 3 || l == 6 || l == 7 ? DType::kQ6_K : DType::kQ5_K);
    EXPECT_EQ(gguf_tensor_type(q4_k_m, "blk." + std::to_string(l) + ".attn_q.weight", square, 8, true), DType::kQ4_K);
  }
  EXPECT_EQ(six_bit_layers, (std::vector<int64_t>{0, 3, 6, 7}));
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "output.weight", square, 8, true), DType::kQ6_K);
  EXPECT_EQ(gguf_tensor_type(q4_0, "output.weight", square, 8, true), DType::kQ6_K);
  EXPECT_EQ(gguf_tensor_type(q4_0, "output.weight", narrow, 8, true), DType::kQ8_0);
  EXPECT_EQ(gguf_tensor_type(q8_0, "output.weight", square, 8, true), DType::kQ8_0);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "token_embd.weight", square, 8, false), DType::kQ6_K);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "token_embd.weight", square, 8, true), DType::kQ4_K);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "blk.1.attn_q.weight", narrow, 8, true), DType::kQ5_0);
  EXPECT_EQ(gguf_tensor_type(q5_k_m, "blk.1.attn_q.weight", narrow, 8, true), DType::kQ5_1);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "blk.0.ffn_down.weight", narrow, 8, true), DType::kQ8_0);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "blk.1.ffn_down.weight", odd, 8, true), DType::kF16);
  EXPECT_EQ(gguf_tensor_type(q4_0, "blk.1.ffn_down.weight", odd, 8, true), DType::kF16);
  EXPECT_EQ(gguf_tensor_type(q4_k_m, "blk.1.attn_norm.weight", std::vector<int64_t>{256}, 8, true), DType::kF32);
}

// An f32 file goes through the GGUF model loader and gives the HF model: config, vocabulary
// specials, and weights (Q/K in the adjacent-pair layout the GGUF loader keeps).
TEST(SyntheticGguf, F32FileLoadsAsTheHfModel) {
  const SyntheticModelSpec spec = wide_spec();
  TempDir dir;
  ASSERT_TRUE(write_synthetic_model(spec, dir / "hf").ok());
  ASSERT_TRUE(write_synthetic_gguf(spec, *gguf_file_type("f32"), dir / "m.gguf").ok());
  auto hf = load_model(dir / "hf");
  auto gguf = load_model(dir / "m.gguf");
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  const LlamaConfig &a = hf->config, &b = gguf->config;
  EXPECT_EQ(b.rope_layout, RopeLayout::kAdjacent);
  EXPECT_EQ(std::vector<int64_t>({b.dim, b.hidden_dim, b.n_layers, b.n_heads, b.n_kv_heads, b.head_dim, b.vocab_size,
                                  b.max_position_embeddings}),
            std::vector<int64_t>({a.dim, a.hidden_dim, a.n_layers, a.n_heads, a.n_kv_heads, a.head_dim, a.vocab_size,
                                  a.max_position_embeddings}));
  EXPECT_FLOAT_EQ(static_cast<float>(b.rms_norm_eps), static_cast<float>(a.rms_norm_eps));
  EXPECT_EQ(b.rope_theta, a.rope_theta);
  EXPECT_EQ(b.tie_word_embeddings, a.tie_word_embeddings);
  EXPECT_EQ(b.bos_token_id, a.bos_token_id);
  EXPECT_EQ(b.eos_token_ids, a.eos_token_ids);
  ASSERT_TRUE(gguf->gguf_vocabulary.has_value());
  EXPECT_EQ(gguf->gguf_vocabulary->model, "gpt2");
  EXPECT_EQ(static_cast<int64_t>(gguf->gguf_vocabulary->tokens.size()), a.vocab_size);
  EXPECT_EQ(gguf->gguf_vocabulary->tokens[static_cast<size_t>(a.bos_token_id)], "<|begin_of_text|>");

  const std::map<std::string, std::vector<float>> expected = hf_weights_by_gguf_name(*hf);
  auto same = [&](const std::string& name, const WeightTensor& w) {
    EXPECT_EQ(testing::values_of(w), expected.at(name)) << name;
  };
  same("token_embd.weight", gguf->weights.embed);
  same("output_norm.weight", gguf->weights.final_norm);
  for (int64_t l = 0; l < b.n_layers; ++l) {
    const LlamaLayerWeights& layer = gguf->weights.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    same(p + "attn_q.weight", layer.wq);
    same(p + "attn_k.weight", layer.wk);
    same(p + "attn_v.weight", layer.wv);
    same(p + "ffn_down.weight", layer.w_down);
  }
}

TEST(SyntheticGguf, MkmodelWritesGgufAndRefusesQuantizedHf) {
  TempDir dir;
  const std::string mkmodel = STAR_MKMODEL_PATH;
  const std::string gguf = (dir / "q.gguf").string();
  ASSERT_EQ(std::system((mkmodel + " --format gguf --dtype q4_k_m --seed 3 --out " + gguf + " >/dev/null").c_str()), 0);
  auto file = GgufFile::open(gguf);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(*file->get_string("general.architecture"), "llama");
  EXPECT_EQ(*file->get_int("general.file_type"), 15);
  EXPECT_NE(std::system((mkmodel + " --dtype q4_0 --out " + (dir / "hf").string() + " 2>/dev/null").c_str()), 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "hf" / "model.safetensors"));
}

}  // namespace
}  // namespace star
