// What the star-server end-to-end tests share: one tiny star-mkmodel model and one
// `mpirun -np 2 star-server` on it for the whole binary (tests that need other server options
// start their own), plus a way to run the other tools.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "support/server_process.h"
#include "support/star_calls.h"
#include "support/temp_dir.h"

namespace star::testing {

inline constexpr const char* kApiKey = "e2e-key";
// The main server's context cache: room for three of the session tests' contexts on each rank.
inline constexpr int64_t kCacheBytes = 800000;

// Lines of plain text; ~42 tokens each with the tiny model's tokenizer.
inline std::string context_text(int lines, const std::string& topic) {
  std::string text;
  for (int i = 1; i <= lines; ++i) {
    text += "Line " + std::to_string(i) + " of the notes about " + topic + ": the quick brown fox jumps over the lazy dog.\n";
  }
  return text;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command; stdout is captured, stderr goes to the test log.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Polls until pred() holds or the time is up; returns pred().
template <typename Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return pred();
}

inline std::string mpirun_prefix(int ranks) {
  return std::string(STAR_MPIEXEC) + " " + STAR_MPIEXEC_FLAGS + " -np " + std::to_string(ranks) + " ";
}

class E2E : public ::testing::Test {
 public:
  static std::filesystem::path model() { return shared().dir.path() / "model"; }
  static const TempDir& scratch() { return shared().dir; }
  static ServerProcess& server() { return *shared().server; }
  static v1::StarService::Stub& stub() { return *shared().stub; }
  static CallOptions with_key(std::optional<std::chrono::milliseconds> deadline = std::nullopt) {
    return {kApiKey, deadline};
  }
  static std::filesystem::path write_file(const std::string& name, const std::string& text) {
    const std::filesystem::path path = scratch().path() / name;
    std::ofstream(path) << text;
    return path;
  }
  // Stops the shared server; registered as a gtest environment's TearDown.
  static void stop_shared() { shared_ptr().reset(); }

 protected:
  void SetUp() override {
    ASSERT_TRUE(shared().server) << "star-mkmodel failed";
    ASSERT_TRUE(server().ready()) << server().log();
  }

 private:
  struct Shared {
    Shared() {
      const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + (dir.path() / "model").string() +
                               " --preset tiny --seed 3 >/dev/null";
      if (std::system(make.c_str()) != 0) return;
      server = std::make_unique<ServerProcess>(
          dir.path() / "model", 2,
          std::vector<std::string>{"--api-key", kApiKey, "--context-cache-bytes", std::to_string(kCacheBytes)});
      stub = v1::StarService::NewStub(server->channel());
    }
    TempDir dir;
    std::unique_ptr<ServerProcess> server;
    std::unique_ptr<v1::StarService::Stub> stub;
  };
  static std::unique_ptr<Shared>& shared_ptr() {
    static std::unique_ptr<Shared> shared;
    return shared;
  }
  static Shared& shared() {
    if (!shared_ptr()) shared_ptr() = std::make_unique<Shared>();
    return *shared_ptr();
  }
};

}  // namespace star::testing
