// The products of a group of shared decode rows under column sharing (row_sharing.h,
// Split::kColumns): every rank multiplies the rows by its slice of each weight's rows
// (column_slice, kept on the weight's panels by weight_rows) and share_columns hands every rank
// the whole product, so a row's outputs are bit for bit those of the unsplit product.
#pragma once

#include <cstdint>
#include <vector>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/model/llama_config.h"
#include "star/model/llama_weights.h"
#include "star/quant/blocks.h"

namespace star {

class ColumnSplitProducts {
 public:
  // For groups of at most `most_rows` rows.
  ColumnSplitProducts(Communicator& comm, const LlamaConfig& c, int64_t most_rows);

  // q [rows, q_dim], k and v [rows, kv_dim] = h [rows, dim] · wq, wk, wv ᵀ.
  Status qkv(const LlamaLayerWeights& w, const float* h, int64_t rows, float* q, float* k, float* v);
  // x [rows, dim] += in [rows, w.cols()] · wᵀ (wo, w_down).
  Status add_product(const WeightTensor& w, const float* in, int64_t rows, float* x);
  // x [rows, dim] += SwiGLU(h · w_gateᵀ, h · w_upᵀ) · w_downᵀ; `hidden` [rows, hidden_dim] scratch.
  // The gate's and the up's slices are the same hidden units, so SwiGLU runs on the slices. Where
  // the down product reads its input as Q8_0 blocks (matmul_reads_q8_0_blocks), the ranks hand
  // over their slices as those blocks instead of floats.
  Status add_ffn(const LlamaLayerWeights& w, const float* h, int64_t rows, float* hidden, float* x);

 private:
  WeightTensor mine(const WeightTensor& w) const;
  // x [rows, dim] += the whole product of which slices_ holds this rank's columns.
  Status add_shared_slices(int64_t rows, float* x);

  Communicator& comm_;
  int64_t dim_, hidden_dim_;
  std::vector<float> slices_;  // this rank's columns of a group's products
  std::vector<float> whole_;   // a [rows, dim] product, every rank's columns
  std::vector<quant::BlockQ8_0> slice_blocks_, whole_blocks_;  // the SwiGLU output as Q8_0 blocks
};

}  // namespace star
