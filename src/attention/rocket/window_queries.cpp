#include "star/attention/rocket/window_queries.h"

#include <algorithm>
#include <cstring>

namespace star::rocket {

WindowQueries prompt_window(const WindowQueries& context, const WindowQueries& query, int64_t window_size,
                            int64_t n_layers) {
  const int64_t from_query = std::min(window_size, query.rows);
  const int64_t from_context = std::min(window_size - from_query, context.rows);
  const int64_t qf = std::max(context.q_floats, query.q_floats);
  WindowQueries out{from_context + from_query, from_context, qf, {}};
  out.q.reserve(n_layers * out.rows * qf);
  for (int64_t l = 0; l < n_layers; ++l) {
    if (from_context > 0) {
      const float* c = context.layer(l) + (context.rows - from_context) * qf;
      out.q.insert(out.q.end(), c, c + from_context * qf);
    }
    if (from_query > 0) {
      const float* q = query.layer(l) + (query.rows - from_query) * qf;
      out.q.insert(out.q.end(), q, q + from_query * qf);
    }
  }
  return out;
}

QueryRecorder::QueryRecorder(LayerAttention& inner, int64_t n_layers, int64_t q_floats, int64_t rows,
                             WindowQueries& out)
    : inner_(inner), n_layers_(n_layers), q_floats_(q_floats), rows_(rows), out_(out) {}

Status QueryRecorder::begin(int64_t n_new) {
  out_.rows = std::min(rows_, n_new);
  out_.context_rows = 0;
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
