// EngineModel::row_split, written once for every backend: a fused forward's rows in consecutive
// parts, each attended by its own LayerAttention. A part's rows are a slice of q, k, v and out, so
// any backend whose layer attentions take row pointers (host or device) binds it:
//   RowSplitLayer<LayerAttention>                       the CPU's
//   RowSplitLayer<cuda::DeviceLayerAttention, cudaStream_t>  the GPU's (the stream passed through)
// RowSplitStats reports what the parts counted.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "star/attention/attention_shape.h"
#include "star/common/status.h"
#include "star/engine/engine_model.h"

namespace star {

// Ok when every part names an attention and no part has negative rows.
Status check_row_parts(const std::vector<RowPart>& parts);

template <class Layer, class... Context>
class RowSplitLayer final : public Layer {
 public:
  struct Part {
    Layer* layer = nullptr;
    int64_t rows = 0;
  };

  RowSplitLayer(AttentionShape shape, std::vector<Part> parts) : shape_(shape), parts_(std::move(parts)) {}

  Status begin(int64_t n_new, Context... ctx) override {
    int64_t rows = 0;
    for (const Part& part : parts_) rows += part.rows;
    if (rows != n_new) {
      return invalid_argument("row_split: the parts hold " + std::to_string(rows) + " rows but the forward has " +
                              std::to_string(n_new));
    }
    for (const Part& part : parts_) {
      if (part.rows == 0) continue;
      if (Status s = part.layer->begin(part.rows, ctx...); !s.ok()) return s;
    }
    return ok_status();
  }

  Status attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n, float* out,
                Context... ctx) override {
    static_cast<void>(n);
    const int64_t qf = shape_.q_floats(), kvf = shape_.kv_floats();
    int64_t row = 0;
    for (const Part& part : parts_) {
      if (part.rows > 0) {
        if (Status s = part.layer->attend(layer, q + row * qf, k + row * kvf, v + row * kvf, part.rows,
                                          out + row * qf, ctx...);
            !s.ok()) {
          return s;
        }
      }
      row += part.rows;
    }
    return ok_status();
  }

 private:
  AttentionShape shape_;
  std::vector<Part> parts_;
};

// The EngineAttention side of a row split: sums over the parts. Each part keeps its own Skip
// Softmax S (set it on the part), so set_skip_softmax here changes nothing.
class RowSplitStats : public EngineAttention {
 public:
  explicit RowSplitStats(std::vector<RowPart> parts) : parts_(std::move(parts)) {}
  double communication_cpu_seconds() const override;
  int64_t floats_sent() const override;
  double gather_merge_seconds() const override;
  void set_skip_softmax(double) override {}
  SkipSoftmaxTiles skip_softmax_tiles() const override;

 private:
  std::vector<RowPart> parts_;
};

}  // namespace star
