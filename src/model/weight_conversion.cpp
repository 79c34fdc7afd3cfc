#include "weight_conversion.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "star/quant/dequantize.h"

namespace star {
namespace {

// Blocks hold 16-bit scales; plain types their element size.
size_t natural_alignment(DType dtype) { return dtype == DType::kF32 ? alignof(float) : alignof(uint16_t); }

void convert_vector(const TensorView& view, WeightTensor& out) {
  out.owned.resize(static_cast<size_t>(view.numel()));
  if (dtype_is_quantized(view.dtype)) {
    quant::dequantize_rows(view.dtype, view.data, 1, view.numel(), out.owned.data());
  } else {
    convert_to_f32(view.dtype, view.data, out.owned.size(), out.owned.data());
  }
  out.dtype = DType::kF32;
  out.data = reinterpret_cast<const std::byte*>(out.owned.data());
  out.keep_alive.reset();
}

}  // namespace

Status to_weight_tensor(const TensorView& view, std::span<const int64_t> expected_shape, WeightTensor& out) {
  if (!std::equal(view.shape.begin(), view.shape.end(), expected_shape.begin(), expected_shape.end())) {
    return invalid_argument(view.file().string() + ": tensor '" + view.name + "' has shape " +
                            shape_to_string(view.shape) + ", expected " + shape_to_string(expected_shape));
  }
  const int64_t cols = view.shape.empty() ? 0 : view.shape.back();
  if (dtype_row_bytes(view.dtype, cols) < 0) {
    return invalid_argument(view.file().string() + ": tensor '" + view.name + "' of type " +
                            dtype_name(view.dtype) + " has rows of " + std::to_string(cols) +
                            " elements, not a whole number of " +
                            std::to_string(dtype_block_elements(view.dtype)) + "-element blocks");
  }
  out.shape = view.shape;
  out.dtype = view.dtype;
  if (view.shape.size() == 1 && view.dtype != DType::kF32) {
    convert_vector(view, out);
    return ok_status();
  }
  if (reinterpret_cast<uintptr_t>(view.data) % natural_alignment(view.dtype) == 0) {
    out.data = view.data;
    out.keep_alive = view.mapping;
    out.owned.clear();
    return ok_status();
  }
  out.owned.resize((view.bytes + sizeof(float) - 1) / sizeof(float));
  if (view.bytes > 0) std::memcpy(out.owned.data(), view.data, view.bytes);
  out.data = reinterpret_cast<const std::byte*>(out.owned.data());
  out.keep_alive.reset();
  return ok_status();
}

WeightTensor borrow_tensor(const WeightTensor& embed) {
  WeightTensor t;
  t.dtype = embed.dtype;
  t.data = embed.data;
  t.shape = embed.shape;
  t.keep_alive = embed.keep_alive;
  return t;
}

}  // namespace star
