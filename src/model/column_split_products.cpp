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
  const ColumnPiece piece{sg, hidden, hidden_dim_};
  if (Status s = share_columns(comm_, rows, {&piece, 1}); !s.ok()) return s;
  return add_product(w.w_down, hidden, rows, x);
}

}  // namespace star
