// A stored tensor (TensorView) -> a WeightTensor of the shape the config expects.
#pragma once

#include <span>

#include "star/common/status.h"
#include "star/model/llama_weights.h"
#include "star/model/tensor_view.h"

namespace star {

// kInvalidArgument "<file>: tensor '<name>' has shape [..], expected [..]" on a mismatch, and when a
// block-quantized tensor's rows are not whole blocks. A matrix keeps its stored type and borrows the
// mapping (keep_alive), copied into `owned` only when the file leaves it misaligned for its type; a
// vector (the norms) of another type is converted to float32, which the elementwise kernels read.
Status to_weight_tensor(const TensorView& view, std::span<const int64_t> expected_shape, WeightTensor& out);

// `embed`'s storage and shape, borrowed: the tied output projection.
WeightTensor borrow_tensor(const WeightTensor& embed);

}  // namespace star
