#include "star/backend/cpu/embedding.h"

#include <algorithm>
#include <cassert>

namespace star::cpu {

void embedding_lookup(const float* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n,
                      float* out) {
  for (int64_t i = 0; i < n; ++i) {
    assert(ids[i] >= 0 && ids[i] < vocab);
    const float* row = table + static_cast<int64_t>(ids[i]) * dim;
    std::copy(row, row + dim, out + i * dim);
  }
}

}  // namespace star::cpu
