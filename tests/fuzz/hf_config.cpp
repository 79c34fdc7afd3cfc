// config.json parsing: the input is config.json, optionally followed by a NUL byte and
// generation_config.json (JSON text never holds a raw NUL). A config that loads must be valid, and
// writing it back as config.json and parsing that again must give the same model shape.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "star/model/config_validation.h"
#include "star/model/hf_config.h"

namespace {

std::string describe(const star::LlamaConfig& c) {
  return "dim " + std::to_string(c.dim) + " hidden " + std::to_string(c.hidden_dim) + " layers " +
         std::to_string(c.n_layers) + " heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) +
         " head_dim " + std::to_string(c.head_dim) + " vocab " + std::to_string(c.vocab_size) + " positions " +
         std::to_string(c.max_position_embeddings);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  scratch.write("config.json", input.substr(0, split));
  if (split == std::string_view::npos) {
    std::filesystem::remove(scratch.path() / "generation_config.json");
  } else {
    scratch.write("generation_config.json", input.substr(split + 1));
  }

  star::Result<star::LlamaConfig> config = star::load_hf_config(scratch.path());
  if (!config.ok()) {
    STAR_FUZZ_CHECK(!config.status().message().empty(), "an error without a message");
    return 0;
  }
  const star::Status valid = star::validate_llama_config(*config, "loaded");
  STAR_FUZZ_CHECK(valid.ok(), valid.to_string());

  const nlohmann::json written = star::hf_config_json(*config, star::DType::kF32);
  star::Result<star::LlamaConfig> again = star::parse_hf_config(written, "written");
  STAR_FUZZ_CHECK(again.ok(), again.status().to_string() + "\n" + written.dump());
  STAR_FUZZ_CHECK(describe(*again) == describe(*config), describe(*config) + " came back as " + describe(*again));
  return 0;
}
