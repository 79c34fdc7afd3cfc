// Where tests find the real models scripts/fetch_models.sh downloads (never committed): the cache
// ~/.cache/starserve, or $STAR_MODEL_CACHE. Tests that need one skip cleanly when it is absent.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace star::testing {

inline std::filesystem::path model_cache_dir() {
  if (const char* dir = std::getenv("STAR_MODEL_CACHE"); dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "") / ".cache" / "starserve";
}

// SmolLM2-135M-Instruct as a Q4_1 GGUF (gpt2 vocabulary, ChatML), or empty when not fetched.
inline std::filesystem::path smollm2_gguf_path() {
  std::filesystem::path path = model_cache_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(path) ? path : std::filesystem::path();
}

// tests/reference/convert_with_llamacpp.sh's output: a star-mkmodel Llama-3-style HF directory
// (hf/) and llama.cpp's convert_hf_to_gguf.py conversion of it (model-f32.gguf); empty when absent.
inline std::filesystem::path llamacpp_converted_dir() {
  std::filesystem::path dir = model_cache_dir() / "llamacpp-llama3";
  return std::filesystem::exists(dir / "model-f32.gguf") && std::filesystem::exists(dir / "hf" / "config.json")
             ? dir
             : std::filesystem::path();
}

}  // namespace star::testing

// Skips the current test when the SmolLM2 GGUF has not been fetched, saying how to fetch it.
#define STAR_REQUIRE_SMOLLM2(var)                                                                  \
  const std::filesystem::path var = ::star::testing::smollm2_gguf_path();                          \
  if (var.empty()) {                                                                               \
    GTEST_SKIP() << "SmolLM2 GGUF not found in " << ::star::testing::model_cache_dir()             \
                 << "; run scripts/fetch_models.sh";                                               \
  }
