#include "star/model/weight_tensor.h"

namespace star {

// An unset tensor (empty shape) has no elements; every Llama weight has rank 1 or 2.
int64_t WeightTensor::numel() const {
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace star
