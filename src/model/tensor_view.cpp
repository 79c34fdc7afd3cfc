#include "star/model/tensor_view.h"

namespace star {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t checked_tensor_bytes(std::span<const int64_t> shape, size_t element_size) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t bytes = static_cast<int64_t>(element_size);
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && bytes > kLimit / d) return -1;
    bytes *= d;
  }
  return bytes;
}

}  // namespace star
