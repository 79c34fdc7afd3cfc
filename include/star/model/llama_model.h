// LlamaModel: the Llama forward pass on the CPU backend, for any attention algorithm.
//
//   x = embed[tokens]                                   [n, dim]
//   per layer:  h = rms_norm(x) ; q,k,v = h·Wq/Wk/Wv      [n, Hq·d], [n, Hkv·d]
//               rope(q, k, positions) ; a = attention(q, k, v)   (LayerAttention)
//               x += a·Wo
//               h = rms_norm(x) ; x += (silu(h·Wg) ⊙ h·Wu)·Wd
//   logits = rms_norm(x)·lm_headᵀ for the last rows asked for   [rows, vocab]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "star/backend/cpu/rope.h"
#include "star/common/status.h"
#include "star/model/layer_attention.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"
#include "star/model/row_sharing.h"
#include "star/model/vocab_slice.h"

namespace star {

// The checks every backend's forward pass makes before any work: one position per token,
// 0 <= logit_rows <= tokens, every id inside the vocabulary.
Status validate_forward_inputs(const LlamaConfig& config, std::span<const int32_t> tokens,
                               std::span<const int32_t> positions, int64_t logit_rows);
// forward_rows' rows: ascending, each in [0, tokens).
Status validate_logit_rows(std::span<const int64_t> logit_rows, int64_t tokens);

class LlamaModel {
 public:
  // Fails when the configuration cannot drive RoPE (odd head_dim, bad scaling factors). Packs the
  // layer matrices and the output projection the CPU multiplies from panels (cpu::prelay_weight).
  static Result<LlamaModel> create(LlamaConfig config, LlamaWeights weights);

  const LlamaConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  // Frees the CPU panels (cpu::prelay_weight), for a model another backend runs: its
  // products then read the stored weights.
  void release_cpu_panels();

  // Runs n = tokens.size() new tokens at explicit RoPE positions through every layer and returns
  // the logits of the last `logit_rows` tokens, [logit_rows, vocab] (empty when logit_rows == 0).
  // Activation memory is O(n · max(dim, hidden)), independent of what the tokens attend to.
  Result<std::vector<float>> forward(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                     LayerAttention& attention, int64_t logit_rows = 1) const;
  // The same pass with the logits of rows `logit_rows` (ascending, each in [0, tokens)) only, and
  // only columns `vocab`: [logit_rows.size(), vocab.count]; the decode rows of many sequences in
  // one fused forward. Where the output projection runs row dots (few rows), each logit is the
  // same whatever the slice; on sgemm, within float rounding. With `sharing` (every rank of its
  // group calls this together), each shared row's layers run on its owner only, or each product of
  // the shared rows on every rank for a slice of its columns (row_sharing.h), with the same result
  // (by columns where shares_columns_alike()). With `phase1_rows` >= 0, rows [0, phase1_rows) are a Phase 1 chunk's,
  // multiplied as forward() multiplies them alone, and the rows after them decode rows, multiplied
  // in groups of at most kDecodeGroupRows: the kernels give such a row the same bits whatever rows
  // share its group (dot_kernels.h), where a product over the chunk's rows too would take sgemm.
  // So a decode row's result does not depend on the rows beside it in the step (with sharing,
  // phase1_rows is sharing->first_shared). Up to rows_multiplied_alike() rows in all, the chunk
  // and the decode rows go in one product (each weight read once), with the same bits. -1: every
  // row in one product. `largest_only`: each row's logits only where they may be its largest, the
  // others possibly −inf (cpu::matmul_wide_activations_maxima), for greedy decoding.
  Result<std::vector<float>> forward_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                          LayerAttention& attention, std::span<const int64_t> logit_rows,
                                          VocabSlice vocab = {}, const RowSharing* sharing = nullptr,
                                          int64_t phase1_rows = -1, bool largest_only = false) const;

  // Whether sharing by columns gives every row the bits of the forward without sharing: the FFN's
  // width a multiple of 16, so that every slice is whole SIMD vectors to SwiGLU (its tail differs).
  bool shares_columns_alike() const;

  // The largest group of decode rows forward_rows multiplies at once: cpu::kRowDotMaxRows, the
  // fewest rows any weight type's few-rows kernel takes.
  static constexpr int64_t kDecodeGroupRows = 16;

 private:
  // Every layer over the tokens: the residual stream x [n, dim] before the final norm (with
  // `sharing`, every row's: the shared rows' from their owners). Rows from `phase1_rows` on (if
  // >= 0) are decode rows, as forward_rows says.
  Result<std::vector<float>> hidden(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                    LayerAttention& attention, const RowSharing* sharing, int64_t phase1_rows) const;
  // rms_norm(rows [count, dim])·lm_headᵀ, columns `vocab` (whole: count >= 0), in one product;
  // forward_rows calls it per group of at most kDecodeGroupRows rows. `largest_only` as there.
  std::vector<float> logits_of(const float* rows, int64_t count, VocabSlice vocab, bool largest_only = false) const;

  LlamaModel(LlamaConfig config, LlamaWeights weights, cpu::RopeTable rope);

  // The fewest cpu::rows_multiplied_alike over the layers' matrices: a step of at most this many
  // rows multiplies its Phase 1 chunk and decode rows in one product, each row's bits unchanged.
  // Asked at every forward: the panels and cpu::limit_isa can change what the kernels promise.
  int64_t rows_multiplied_alike() const;

  LlamaConfig config_;
  LlamaWeights weights_;
  cpu::RopeTable rope_;
};

}  // namespace star
