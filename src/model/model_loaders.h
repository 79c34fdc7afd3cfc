// The two checkpoint formats load_model dispatches to.
#pragma once

#include <filesystem>

#include "star/model/model_loader.h"

namespace star {

Result<LoadedModel> load_hf_model(const std::filesystem::path& model_dir);
Result<LoadedModel> load_gguf_model(const std::filesystem::path& gguf_path);

}  // namespace star
