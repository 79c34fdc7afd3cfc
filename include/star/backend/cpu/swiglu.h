// The SwiGLU gate of Llama's feed-forward block.
#pragma once

#include <cstdint>

namespace star::cpu {

// out[n] = silu(gate[n]) * up[n], silu(x) = x / (1 + e^-x). out may alias gate or up.
void swiglu(const float* gate, const float* up, int64_t n, float* out);

}  // namespace star::cpu
