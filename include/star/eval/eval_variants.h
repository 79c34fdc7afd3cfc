// Attention variants for star-eval given as data: a JSON object whose keys name table columns and
// whose values are AttentionConfig JSON (attention_config_io.h), e.g.
//   {"star-overlap64": {"algorithm": "star", "boundary_overlap": 64},
//    "star-anchor-quarter": {"algorithm": "star", "anchor_size": 256}}
// so that any setting a config file can hold (the sparse ones included) is compared without a
// change to star-eval. Each value starts from the AttentionConfig defaults; star-eval then sets the
// block size of blocked algorithms from --blocks, as it does for the built-in names.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "star/attention/attention_config.h"
#include "star/common/status.h"

namespace star::eval {

struct EvalVariant {
  std::string name;
  AttentionConfig config;
};

// In the names' sorted order. INVALID_ARGUMENT naming the variant for a value that is not a valid
// attention config, a name that is empty or contains '/' (names become file names), or one of
// `taken` (the built-in algorithm names in the same run).
Result<std::vector<EvalVariant>> eval_variants_from_json(const nlohmann::json& json,
                                                         const std::vector<std::string>& taken);
// The same from a file; errors name the file.
Result<std::vector<EvalVariant>> load_eval_variants(const std::filesystem::path& path,
                                                    const std::vector<std::string>& taken);

}  // namespace star::eval
