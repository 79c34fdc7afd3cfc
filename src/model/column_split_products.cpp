#include "column_split_products.h"

#include <algorithm>
#include <array>

#include "star/backend/cpu/matmul.h"
#include "star/backend/cpu/swiglu.h"
#include "star/model/row_sharing.h"

namespace star {

ColumnSplitProducts::ColumnSplitProducts(Communicator& comm, const LlamaConfig& c, int64_t most_rows)
    : comm_(comm),
      dim_(c.dim),
      hidden_dim_(c.hidden_dim),
      slices_(static_cast<size_t>(most_rows * std::max({c.q_dim() + 2 * c.kv_dim(), 2 * c.hidden_dim, c.dim}))),
      whole_(static_cast<size_t>(most_rows * c.dim)) {}

WeightTensor ColumnSplitProducts::mine(const WeightTensor& w) const {
  const ColumnSlice slice = column_slice(w.rows(), comm_.rank(), comm_.size());
  return weight_rows(w, slice.first, slice.count);
}

Status ColumnSplitProducts::qkv(const LlamaLayerWeights& w, const float* h, int64_t rows, float* q, float* k,
                                float* v) {
  const WeightTensor wq = mine(w.wq), wk = mine(w.wk), wv = mine(w.wv);
  float* sq = slices_.data();
  float* sk = sq + rows * wq.rows();
  float* sv = sk + rows * wk.rows();
  cpu::matmul_shared_input(h, rows, {{&wq, sq}, {&wk, sk}, {&wv, sv}});
  const std::array<ColumnPiece, 3> pieces = {
      {{sq, q, w.wq.rows()}, {sk, k, w.wk.rows()}, {sv, v, w.wv.rows()}}};
  return share_columns(comm_, rows, pieces);
}

Status ColumnSplitProducts::add_product(const WeightTensor& w, const float* in, int64_t rows, float* x) {
  cpu::matmul(in, rows, mine(w), slices_.data());
  return add_shared_slices(rows, x);
}

Status ColumnSplitProducts::add_shared_slices(int64_t rows, float* x) {
  const ColumnPiece piece{slices_.data(), whole_.data(), dim_};
  if (Status s = share_columns(comm_, rows, {&piece, 1}); !s.ok()) return s;
  // The product's own accumulate adds each sum to x once, as this does.
  for (int64_t i = 0; i < rows * dim_; ++i) x[i] += whole_[i];
  return ok_status();
}

Status ColumnSplitProducts::add_ffn(const LlamaLayerWeights& w, const float* h, int64_t rows, float* hidden,
                                    float* x) {
  const WeightTensor gate = mine(w.w_gate), up = mine(w.w_up);
  float* sg = slices_.data();
  float* su = sg + rows * gate.rows();
  cpu::matmul_shared_input(h, rows, {{&gate, sg}, {&up, su}});
  cpu::swiglu(sg, su, rows * gate.rows(), sg);
  if (!cpu::matmul_reads_q8_0_blocks(w.w_down) || hidden_dim_ % quant::kLegacyBlock != 0) {
    const ColumnPiece piece{sg, hidden, hidden_dim_};
    if (Status s = share_columns(comm_, rows, {&piece, 1}); !s.ok()) return s;
    return add_product(w.w_down, hidden, rows, x);
  }
  // The down product would round its input to Q8_0 blocks anyway: each rank rounds its slice and
  // hands over blocks, 34 bytes for 32 floats' 128.
  const int64_t slice_blocks = gate.rows() / quant::kLegacyBlock, blocks = hidden_dim_ / quant::kLegacyBlock;
  slice_blocks_.resize(static_cast<size_t>(rows * slice_blocks));
  whole_blocks_.resize(static_cast<size_t>(rows * blocks));
  for (int64_t i = 0; i < rows; ++i) {
    cpu::quantize_activation_row(cpu::ActivationType::kQ8_0, sg + i * gate.rows(), gate.rows(),
                                 reinterpret_cast<std::byte*>(slice_blocks_.data() + i * slice_blocks));
  }
  const ColumnBlocks piece{slice_blocks_.data(), whole_blocks_.data(), hidden_dim_};
  if (Status s = share_column_blocks(comm_, rows, piece); !s.ok()) return s;
  cpu::matmul_q8_0_rows(whole_blocks_.data(), rows, mine(w.w_down), slices_.data());
  return add_shared_slices(rows, x);
}

}  // namespace star
