#include "star/model/model_loader.h"

#include "model_loaders.h"

namespace star {

Result<LoadedModel> load_model(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_hf_model(path);
  if (std::filesystem::is_regular_file(path, ec)) return load_gguf_model(path);
  return not_found(path.string() + ": no such model (expected an HF directory or a .gguf file)");
}

}  // namespace star
