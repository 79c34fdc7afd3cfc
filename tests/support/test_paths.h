// Where tests find shared data. Tests that need stories260K skip cleanly when ../shared is absent.
#pragma once

#include <filesystem>
#include <optional>

namespace star::testing {

// ../shared/models/stories260K beside the checkout, or nullopt when it is not there.
inline std::optional<std::filesystem::path> stories260k_dir() {
  std::filesystem::path dir = std::filesystem::path(STAR_SHARED_DIR) / "models" / "stories260K";
  if (std::filesystem::exists(dir / "stories260K.gguf")) return dir;
  return std::nullopt;
}

inline std::filesystem::path source_dir() { return std::filesystem::path(STAR_SOURCE_DIR); }

}  // namespace star::testing

// Skips the current test when stories260K is absent, with a message that says where it was looked for.
#define STAR_REQUIRE_STORIES260K(var)                                                       \
  auto var##_opt = ::star::testing::stories260k_dir();                                      \
  if (!var##_opt) GTEST_SKIP() << "stories260K not found under " STAR_SHARED_DIR "/models"; \
  const std::filesystem::path var = *var##_opt
