// ServerProcess: `mpirun -np N star-server` on an ephemeral loopback port, for end-to-end tests.
// The server picks a free port itself (--grpc 127.0.0.1:0) and reports it through --port-file, so
// two tests never race for a port. The constructor returns once the health service says SERVING;
// the destructor stops the server if the test did not.
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

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "support/spawn_logged.h"
#include "support/temp_dir.h"


namespace star::testing {

class ServerProcess {
 public:
  // args: star-server arguments after --model/--grpc/--port-file. `grpc`: the address to listen
  // on; the default lets the server pick a free port (a restart test reuses a stopped one's).
  ServerProcess(const std::filesystem::path& model, int ranks, const std::vector<std::string>& args,
                const std::string& grpc = "127.0.0.1:0") {
    const std::filesystem::path port_file = dir_.path() / "port";
    log_ = dir_.path() / "server.log";
    std::vector<std::string> argv = {STAR_MPIEXEC};
    std::istringstream flags(STAR_MPIEXEC_FLAGS);
    for (std::string flag; flags >> flag;) argv.push_back(flag);
    for (const std::string& a : {std::string("-np"), std::to_string(ranks), std::string(STAR_SERVER_PATH),
                                 std::string("--model"), model.string(), std::string("--grpc"), grpc,
                                 std::string("--port-file"), port_file.string()}) {
      argv.push_back(a);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    mpirun_pid_ = spawn_logged(std::move(argv), log_);
    if (mpirun_pid_ < 0) return;

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(port_file)) {
      if (std::chrono::steady_clock::now() > deadline || exited()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream in(port_file);
    in >> port_;
    for (pid_t pid = 0; in >> pid;) rank_pids_.push_back(pid);
    if (!rank_pids_.empty()) rank0_pid_ = rank_pids_.front();
    channel_ = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
    while (health() != grpc::health::v1::HealthCheckResponse::SERVING) {
      if (std::chrono::steady_clock::now() > deadline || exited()) {
        port_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  ~ServerProcess() {
    if (mpirun_pid_ <= 0 || exit_code_ != kRunning) return;
    if (rank0_pid_ > 0) ::kill(rank0_pid_, SIGTERM);
    if (wait_exit(std::chrono::seconds(20)) == kRunning) {
      ::kill(mpirun_pid_, SIGTERM);  // mpirun takes its ranks down with it
      if (wait_exit(std::chrono::seconds(10)) == kRunning) {
        ::kill(mpirun_pid_, SIGKILL);
        wait_exit(std::chrono::seconds(5));
      }
    }
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // True once the server listens and reports SERVING.
  bool ready() const { return port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  pid_t rank0_pid() const { return rank0_pid_; }
  // Every rank's pid, by rank (from --port-file).
  const std::vector<pid_t>& rank_pids() const { return rank_pids_; }

  grpc::health::v1::HealthCheckResponse::ServingStatus health() const {
    auto stub = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc::health::v1::HealthCheckResponse response;
    if (!stub->Check(&context, {}, &response).ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    return response.status();
  }

  // Signals rank 0 (the ranks' graceful shutdown; mpirun's own SIGTERM would kill them).
  void signal_rank0(int signal_number) const { ::kill(rank0_pid_, signal_number); }

  static constexpr int kRunning = -1000;
  // mpirun's exit code (0 when every rank exited 0), or kRunning when it had not exited in time.
  int wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (exit_code_ == kRunning && !exited() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exit_code_;
  }

  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  bool exited() {
    if (exit_code_ != kRunning) return true;
    int status = 0;
    if (::waitpid(mpirun_pid_, &status, WNOHANG) != mpirun_pid_) return false;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  TempDir dir_;
  std::filesystem::path log_;
  pid_t mpirun_pid_ = -1;
  pid_t rank0_pid_ = -1;
  std::vector<pid_t> rank_pids_;
  int port_ = 0;
  int exit_code_ = kRunning;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace star::testing
