#include "star/backend/cpu/embedding.h"

#include <cassert>

#include "star/backend/cpu/matmul.h"

namespace star::cpu {

void embedding_lookup(const WeightTensor& table, const int32_t* ids, int64_t n, float* out) {
  const int64_t dim = table.cols();
  for (int64_t i = 0; i < n; ++i) {
    assert(ids[i] >= 0 && ids[i] < table.rows());
    dequantize_weight_rows(table, ids[i], 1, out + i * dim);
  }
}

}  // namespace star::cpu
