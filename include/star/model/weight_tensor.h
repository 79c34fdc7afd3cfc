// WeightTensor: one weight of a model as it is stored in its file (F32, F16, BF16 or a GGUF block
// type), row-major in HF's Linear layout [out_features, in_features]. Matrices point into the
// memory-mapped checkpoint, so ranks on one host share the pages; only norm vectors are widened to
// float32, and data the file leaves misaligned for its type is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "star/model/dtype.h"

namespace star {
namespace cpu {
struct PrelaidPanels;
}  // namespace cpu

struct WeightTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;              // e.g. {out, in}
  const std::byte* data = nullptr;         // rows() rows of row_bytes() bytes, back to back
  std::vector<float> owned;                // storage of a converted or copied tensor, else empty
  std::shared_ptr<const void> keep_alive;  // the mapping a borrowed tensor points into
  // The CPU's products' own copy, packed once (star/backend/cpu/matmul.h, prelay_weight), or null;
  // a view of rows (weight_rows) starts at the panels' row panel_first.
  std::shared_ptr<const cpu::PrelaidPanels> panels;
  int64_t panel_first = 0;

  int64_t numel() const;
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }
  size_t row_bytes() const { return static_cast<size_t>(dtype_row_bytes(dtype, cols())); }
  size_t bytes() const { return static_cast<size_t>(rows()) * row_bytes(); }
  // The elements of an F32 tensor (norms always are); null for any other type.
  const float* f32() const {
    return dtype == DType::kF32 ? reinterpret_cast<const float*>(data) : nullptr;
  }
};

// Rows [first, first + count) of a matrix, borrowed: valid while w is. The view keeps w's panels
// where it starts at one (first a multiple of kPanelRows), so that its products are bit for bit
// those of the same rows of w; else it is multiplied as stored.
inline constexpr int64_t kPanelRows = 16;
inline WeightTensor weight_rows(const WeightTensor& w, int64_t first, int64_t count) {
  WeightTensor rows;
  rows.dtype = w.dtype;
  rows.shape = {count, w.cols()};
  rows.data = w.data + static_cast<size_t>(first) * w.row_bytes();
  if (w.panels != nullptr && first % kPanelRows == 0) {
    rows.panels = w.panels;
    rows.panel_first = w.panel_first + first;
  }
  return rows;
}

}  // namespace star
