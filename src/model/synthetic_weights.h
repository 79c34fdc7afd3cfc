// The random tensors of a synthetic model (the distributions are described in
// star/model/synthetic_model.h), shared by its HF and GGUF writers: the same seed gives the same
// values in both, whatever the stored type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "star/model/llama_config.h"

namespace star {

struct SyntheticTensorPlan {
  std::string hf_name;    // also what seeds the tensor's random stream
  std::string gguf_name;
  std::vector<int64_t> shape;  // row-major
  double mean;
  double stddev;
};

// The model's tensors in HF order: embedding, each layer's table (llama_tensor_table.h), final
// norm, and lm_head unless tied.
std::vector<SyntheticTensorPlan> plan_synthetic_tensors(const LlamaConfig& config);

std::vector<float> synthetic_tensor_values(uint64_t seed, const SyntheticTensorPlan& tensor);

}  // namespace star
