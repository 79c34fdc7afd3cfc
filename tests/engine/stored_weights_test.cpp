// The engine on a GGUF file of each stored type equals the engine on the float32 weights
// dequantized from that same file (the exact identity: dequantize, then run the f32 path):
// prefill (many rows: widened tiles + sgemm) to float rounding, decode (one row: int8 / bf16
// row dots on rounded activations) within the activation rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "star/attention/layer_attentions.h"
#include "star/backend/cpu/dot_kernels.h"
#include "star/backend/cpu/matmul.h"
#include "star/model/llama_model.h"
#include "star/model/model_loader.h"
#include "star/model/synthetic_gguf.h"
#include "star/quant/dequantize.h"
#include "support/temp_dir.h"

namespace star {
namespace {

// Rows of 256 and 512, so the K-quants are stored as such rather than through their fallbacks.
SyntheticModelSpec wide_spec() {
  SyntheticModelSpec spec;
  spec.config = *synthetic_preset("tiny");
  spec.config.dim = 256;
  spec.config.hidden_dim = 512;
  spec.config.head_dim = 64;
  spec.config.rope_scaling = RopeScaling{};
  spec.seed = 5;
  return spec;
}

void widen(WeightTensor& t) {
  if (t.dtype == DType::kF32) return;
  std::vector<float> values(static_cast<size_t>(t.numel()));
  quant::dequantize_rows(t.dtype, t.data, t.rows(), t.cols(), values.data());
  t.owned = std::move(values);
  t.dtype = DType::kF32;
  t.data = reinterpret_cast<const std::byte*>(t.owned.data());
  t.keep_alive.reset();
}

LlamaWeights widened(const LlamaWeights& stored) {
  LlamaWeights w = stored;
  widen(w.embed);
  widen(w.final_norm);
  widen(w.lm_head);
  for (LlamaLayerWeights& l : w.layers) {
    for (WeightTensor* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      widen(*t);
    }
  }
  return w;
}

// Logits of a prompt (all rows) followed by `decode_steps` single-token steps (one row each).
struct Logits {
  std::vector<float> prefill, decode;
};

Logits run(const LlamaModel& model, const std::vector<int32_t>& prompt, const std::vector<int32_t>& decoded) {
  const LlamaConfig& c = model.config();
  KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
  LocalCausalAttention attention(AttentionShape::of(c), cache);
  std::vector<int32_t> positions(prompt.size());
  std::iota(positions.begin(), positions.end(), 0);
  Logits r;
  auto prefill = model.forward(prompt, positions, attention, static_cast<int64_t>(prompt.size()));
  EXPECT_TRUE(prefill.ok()) << prefill.status().to_string();
  if (prefill.ok()) r.prefill = *prefill;
  for (size_t i = 0; i < decoded.size(); ++i) {
    const std::vector<int32_t> token = {decoded[i]}, position = {static_cast<int32_t>(prompt.size() + i)};
    auto step = model.forward(token, position, attention, 1);
    EXPECT_TRUE(step.ok()) << step.status().to_string();
    if (step.ok()) r.decode.insert(r.decode.end(), step->begin(), step->end());
  }
  return r;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(StoredWeights, EngineEqualsTheF32PathOnTheDequantizedFile) {
  const SyntheticModelSpec spec = wide_spec();
  testing::TempDir dir;
  // Past every type's row-dot limit, so that prefill takes the many-row path.
  std::vector<int32_t> prompt(std::max(cpu::kRowDotMaxRows, cpu::kRowTileMaxRows) + 4);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((37 * i + 11) % 200);
  const std::vector<int32_t> decoded = {7, 150, 42};
  for (const GgufFileType& type : gguf_file_types()) {
    SCOPED_TRACE(type.name);
    const auto file = dir / (std::string(type.name) + ".gguf");
    ASSERT_TRUE(write_synthetic_gguf(spec, type, file).ok());
    Result<LoadedModel> loaded = load_model(file);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    if (type.base != DType::kF32) EXPECT_EQ(loaded->weights.layers[0].w_up.dtype, type.base);
    Result<LlamaModel> reference = LlamaModel::create(loaded->config, widened(loaded->weights));
    Result<LlamaModel> stored = LlamaModel::create(loaded->config, std::move(loaded->weights));
    ASSERT_TRUE(reference.ok() && stored.ok());
    const Logits want = run(*reference, prompt, decoded), got = run(*stored, prompt, decoded);
    ASSERT_EQ(got.prefill.size(), want.prefill.size());
    ASSERT_EQ(got.decode.size(), want.decode.size());

    // Prefill multiplies the same float32 values with sgemm, tile by tile (only the summation
    // order differs), or, for BF16 files on a CPU with AVX512-BF16, the activations rounded to bf16
    // (2^-9 of each value at most; through two layers that moved the logits by at most 0.81% of
    // their largest magnitude, hence 2%), or, for the types on the int8 panels (AVX-512 VNNI), the
    // activations rounded to 8-bit blocks as decode rounds them (the 4% below; 2.3% measured).
    const bool bf16_prefill = type.base == DType::kBF16 && cpu::has_bf16_products();
    const bool int8_prefill = cpu::int8_panels_for(type.base, cpu::best_isa());
    const double prefill_tolerance = int8_prefill ? 4e-2 : bf16_prefill ? 2e-2 : 1e-4;
    EXPECT_LE(max_abs_difference(got.prefill, want.prefill), prefill_tolerance * max_abs(want.prefill)) << "prefill";
    // Decode rounds the inputs of the Q4_0, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K matrices to
    // 8-bit blocks (up to ~1/254 of a block's largest value an element; Q4_1 and a Q8_0 output
    // projection keep float32, a Q6_K one rounds) and those of BF16 ones to bf16 (2^-8 of each
    // value), and reads the keys and values of a bf16 prefill; through two layers and the output
    // projection that moved the logits by at most 2.6% of their largest magnitude (Q4_K), hence
    // 4%. F32 files, and F16 ones after a float32 prefill, keep float32 activations and see only
    // re-association.
    const bool rounded_activations = type.base != DType::kF32 && (type.base != DType::kF16 || bf16_prefill);
    const double decode_tolerance = rounded_activations ? 4e-2 : 1e-4;
    EXPECT_LE(max_abs_difference(got.decode, want.decode), decode_tolerance * max_abs(want.decode)) << "decode";
  }
}

// wide_spec() written to `file` as a Q8_0 GGUF and loaded (LlamaModel::create packs its panels).
Result<LlamaModel> q8_0_model(const std::filesystem::path& file) {
  const GgufFileType* q8 = nullptr;
  for (const GgufFileType& type : gguf_file_types()) {
    if (type.base == DType::kQ8_0) q8 = &type;
  }
  if (q8 == nullptr) return not_found("no Q8_0 GGUF file type");
  if (Status s = write_synthetic_gguf(wide_spec(), *q8, file); !s.ok()) return s;
  Result<LoadedModel> loaded = load_model(file);
  if (!loaded.ok()) return loaded.status();
  return LlamaModel::create(loaded->config, std::move(loaded->weights));
}

// LlamaModel::create packs the Q8_0 layer matrices into panels on AVX-512 VNNI and gives their
// mapped pages back; release_cpu_panels (another backend runs the model) returns the products to
// the stored weights, which must read the file again. Both paths round the activations to the same
// Q8_0 blocks and sum each block exactly, so they differ only in the order of the float sums.
TEST(StoredWeights, Q8_0LayersArePackedOnceAndTheStoredPagesStayReadable) {
  testing::TempDir dir;
  Result<LlamaModel> model = q8_0_model(dir / "q8_0.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const bool packs = cpu::prelays_int8_panels(DType::kQ8_0, cpu::best_isa());
  for (const LlamaLayerWeights& l : model->weights().layers) {
    for (const WeightTensor* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      EXPECT_EQ(t->panels != nullptr, packs);
    }
  }
  if (!packs) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  std::vector<int32_t> prompt(cpu::kRowTileMaxRows + 4);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((29 * i + 3) % 200);
  const std::vector<int32_t> decoded = {9, 120};
  const Logits packed = run(*model, prompt, decoded);
  model->release_cpu_panels();
  EXPECT_EQ(model->weights().layers[0].wq.panels, nullptr);
  const Logits stored = run(*model, prompt, decoded);
  ASSERT_EQ(packed.prefill.size(), stored.prefill.size());
  ASSERT_EQ(packed.decode.size(), stored.decode.size());
  // Re-association of k / 32 block sums per product, which may tip an activation to the next
  // 8-bit code in a later layer: 1% of the largest logit (a stored page read back as zeros or
  // another tensor's bytes moves the logits by their own order).
  EXPECT_LE(max_abs_difference(packed.prefill, stored.prefill), 1e-2 * max_abs(stored.prefill));
  EXPECT_LE(max_abs_difference(packed.decode, stored.decode), 1e-2 * max_abs(stored.decode));
}

// Greedy decoding's logits (forward_rows with largest_only) on a Q8_0 file, whose tied output
// projection multiplies in packed panels: every row's first largest logit is the full forward's
// entry, bit for bit, on the whole vocabulary and on a slice of it; the other logits are those bits
// or −inf, and most are −inf (the Q16 pass skipped).
TEST(StoredWeights, LargestOnlyLogitsKeepEachRowsGreedyToken) {
  testing::TempDir dir;
  Result<LlamaModel> model = q8_0_model(dir / "q8_0.gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  if (model->weights().lm_head.panels == nullptr) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: Q8_0 stays as stored";
  const LlamaConfig& c = model->config();
  std::vector<int32_t> tokens(20), positions(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((37 * i + 11) % 200);
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<int64_t> rows(tokens.size());
  std::iota(rows.begin(), rows.end(), 0);
  // The logits here are finite: the first largest is the first maximum.
  const auto first_maximum = [](const float* row, int64_t count) {
    return static_cast<int64_t>(std::max_element(row, row + count) - row);
  };
  int64_t kept = 0, total = 0;
  for (const VocabSlice vocab : {VocabSlice{0, c.vocab_size}, VocabSlice{16, c.vocab_size - 16}}) {
    std::vector<std::vector<float>> logits;
    for (bool largest_only : {false, true}) {
      KvCache cache(c.n_layers, c.n_kv_heads, c.head_dim);
      LocalCausalAttention attention(AttentionShape::of(c), cache);
      Result<std::vector<float>> out =
          model->forward_rows(tokens, positions, attention, rows, vocab, nullptr, /*phase1_rows=*/0, largest_only);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      logits.push_back(std::move(*out));
    }
    const std::vector<float>& whole = logits[0];
    const std::vector<float>& largest = logits[1];
    ASSERT_EQ(largest.size(), whole.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const float* want = whole.data() + i * vocab.count;
      const float* got = largest.data() + i * vocab.count;
      const int64_t at = first_maximum(want, vocab.count);
      ASSERT_EQ(first_maximum(got, vocab.count), at) << "row " << i << ", vocabulary from " << vocab.first;
      for (int64_t j = 0; j < vocab.count; ++j) {
        const bool same = std::bit_cast<uint32_t>(got[j]) == std::bit_cast<uint32_t>(want[j]);
        ASSERT_TRUE(same || got[j] == -std::numeric_limits<float>::infinity()) << "row " << i << " [" << j << "]";
        kept += same ? 1 : 0;
        ++total;
      }
    }
  }
  EXPECT_LT(kept, total / 2) << "most logits skipped";
}

}  // namespace
}  // namespace star
