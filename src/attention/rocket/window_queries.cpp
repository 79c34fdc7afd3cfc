#include "star/attention/rocket/window_queries.h"

#include <algorithm>
#include <cstring>

namespace star::rocket {

QueryRecorder::QueryRecorder(LayerAttention& inner, int64_t n_layers, int64_t q_floats, int64_t rows,
                             WindowQueries& out)
    : inner_(inner), n_layers_(n_layers), q_floats_(q_floats), rows_(rows), out_(out) {}

Status QueryRecorder::begin(int64_t n_new) {
  out_.rows = std::min(rows_, n_new);
  out_.q_floats = q_floats_;
  out_.q.assign(n_layers_ * out_.rows * q_floats_, 0.f);
  return inner_.begin(n_new);
}

Status QueryRecorder::attend(int64_t layer, const float* q, const float* k, const float* v, int64_t n,
                             float* out) {
  std::memcpy(out_.q.data() + layer * out_.rows * q_floats_, q + (n - out_.rows) * q_floats_,
              out_.rows * q_floats_ * sizeof(float));
  return inner_.attend(layer, q, k, v, n, out);
}

}  // namespace star::rocket
