// A stored tensor (TensorView) -> a float32 WeightTensor of the shape the config expects.
#pragma once

#include <span>

#include "star/common/status.h"
#include "star/model/llama_weights.h"
#include "star/model/tensor_view.h"

namespace star {

// kInvalidArgument "<file>: tensor '<name>' has shape [..], expected [..]" on a mismatch. F32 data
// aligned for float is borrowed (keep_alive = the mapping); anything else is converted into `owned`.
Status to_weight_tensor(const TensorView& view, std::span<const int64_t> expected_shape, WeightTensor& out);

// `embed`'s data and shape, borrowed: the tied output projection.
WeightTensor borrow_tensor(const WeightTensor& embed);

}  // namespace star
