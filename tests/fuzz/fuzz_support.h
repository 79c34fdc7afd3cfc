// Shared by the fuzz targets: property checks that abort (so libFuzzer and the replay driver both
// report them as crashes), a scratch file for readers that take a path, and the fixture paths.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "star/common/status.h"

namespace star::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* check, const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property failed: %s\n%s\n", file, line, check, detail.c_str());
  std::abort();
}

// A fuzz-input-independent failure (fixture missing, setup broken) is not a finding: say so and stop.
[[noreturn]] inline void setup_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz target setup failed: %s\n", what.c_str());
  std::exit(2);
}

// A private folder, removed at exit, for files the readers under test open by path. On tmpfs
// where available: libFuzzer rewrites it for every input.
class ScratchDir {
 public:
  ScratchDir() {
    const std::filesystem::path shm("/dev/shm");
    const std::filesystem::path base = std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path();
    path_ = base / ("star_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `bytes` to `name` inside the folder, replacing what was there; returns its path.
  std::filesystem::path write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) setup_failed("cannot write " + file.string());
    return file;
  }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path tokenizer_fixture(const std::string& name) {
  return std::filesystem::path(STAR_SOURCE_DIR) / "tests" / "fixtures" / "tokenizer" / name;
}

// ../shared/models/stories260K, when present.
inline std::optional<std::filesystem::path> stories260k_dir() {
  const std::filesystem::path dir = std::filesystem::path(STAR_SHARED_DIR) / "models" / "stories260K";
  if (std::filesystem::exists(dir / "stories260K.gguf")) return dir;
  return std::nullopt;
}

}  // namespace star::fuzz

// Aborts with the expression and `detail` when `condition` is false.
#define STAR_FUZZ_CHECK(condition, detail) \
  ((condition) ? (void)0 : ::star::fuzz::fail(__FILE__, __LINE__, #condition, (detail)))
