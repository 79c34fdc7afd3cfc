// Consistency checks on a LlamaConfig, whatever file it came from.
#pragma once

#include <string_view>

#include "star/common/status.h"
#include "star/model/llama_config.h"

namespace star {

// kInvalidArgument naming `source` and the field when a size is not positive, the query heads are
// not a multiple of the KV heads (GQA ratio), rms_norm_eps or rope_theta is not positive, or the
// llama3 rope scaling parameters are out of range (factor >= 1, high_freq_factor > low_freq_factor).
Status validate_llama_config(const LlamaConfig& config, std::string_view source);

}  // namespace star
