#include "weight_conversion.h"

#include <algorithm>
#include <cstdint>

namespace star {

Status to_weight_tensor(const TensorView& view, std::span<const int64_t> expected_shape, WeightTensor& out) {
  if (!std::equal(view.shape.begin(), view.shape.end(), expected_shape.begin(), expected_shape.end())) {
    return invalid_argument(view.file().string() + ": tensor '" + view.name + "' has shape " +
                            shape_to_string(view.shape) + ", expected " + shape_to_string(expected_shape));
  }
  // Until the engine computes with block-quantized weights, they are refused here by name rather
  // than read as if they were plain elements.
  if (dtype_is_quantized(view.dtype)) {
    return unimplemented(view.file().string() + ": tensor '" + view.name + "' is stored as " +
                         dtype_name(view.dtype) + "; the model loader reads only F32, F16 and BF16 weights");
  }
  out.shape = view.shape;
  const bool aligned = reinterpret_cast<uintptr_t>(view.data) % alignof(float) == 0;
  if (view.dtype == DType::kF32 && aligned) {
    out.data = reinterpret_cast<const float*>(view.data);
    out.keep_alive = view.mapping;
    out.owned.clear();
    return ok_status();
  }
  out.owned.resize(static_cast<size_t>(view.numel()));
  convert_to_f32(view.dtype, view.data, out.owned.size(), out.owned.data());
  out.data = out.owned.data();
  out.keep_alive.reset();
  return ok_status();
}

WeightTensor borrow_tensor(const WeightTensor& embed) {
  WeightTensor t;
  t.data = embed.data;
  t.shape = embed.shape;
  t.keep_alive = embed.keep_alive;
  return t;
}

}  // namespace star
