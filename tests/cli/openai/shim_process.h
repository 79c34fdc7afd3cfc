// ShimProcess: `star-openai` on an ephemeral loopback port in front of a test's star-server.
// The constructor returns once GET /health answers (200 or 503); the destructor stops it.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "support/spawn_logged.h"
#include "support/temp_dir.h"


namespace star::testing {

class ShimProcess {
 public:
  // args: star-openai arguments after --listen/--port-file.
  explicit ShimProcess(const std::vector<std::string>& args) {
    const std::filesystem::path port_file = dir_.path() / "port";
    log_ = dir_.path() / "shim.log";
    std::vector<std::string> argv = {STAR_OPENAI_PATH, "--listen", "127.0.0.1:0", "--port-file", port_file.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn_logged(std::move(argv), log_);
    if (pid_ < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::filesystem::exists(port_file)) {
      if (std::chrono::steady_clock::now() > deadline || exited()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int port = 0;
    std::ifstream(port_file) >> port;
    httplib::Client client("127.0.0.1", port);
    while (!client.Get("/health")) {
      if (std::chrono::steady_clock::now() > deadline || exited()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    port_ = port;
  }

  ~ShimProcess() {
    if (pid_ <= 0 || exited()) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!exited() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!exited()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  ShimProcess(const ShimProcess&) = delete;
  ShimProcess& operator=(const ShimProcess&) = delete;

  bool ready() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(std::chrono::seconds(60));
    return c;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  bool exited() {
    if (done_) return true;
    int status = 0;
    done_ = ::waitpid(pid_, &status, WNOHANG) == pid_;
    return done_;
  }

  TempDir dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool done_ = false;
};

}  // namespace star::testing
