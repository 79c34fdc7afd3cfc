#include "star/server/shutdown_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace star::server {

namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
constexpr unsigned char kStopWatcher = 0;  // no signal has number 0

std::atomic<int> g_write_fd{-1};

void write_signal_number(int signal_number) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t written = ::write(g_write_fd.load(), &byte, 1);
  errno = saved_errno;
}

}  // namespace

Result<std::unique_ptr<ShutdownSignal>> ShutdownSignal::install(std::function<void(int)> on_signal) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return internal_error(std::string("pipe2: ") + std::strerror(errno));
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, fds[1])) {
    ::close(fds[0]);
    ::close(fds[1]);
    return failed_precondition("a ShutdownSignal is already installed in this process");
  }
  std::unique_ptr<ShutdownSignal> signal(new ShutdownSignal(fds[0], fds[1], std::move(on_signal)));
  struct sigaction action {};
  action.sa_handler = write_signal_number;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int s : kSignals) ::sigaction(s, &action, nullptr);
  return signal;
}

ShutdownSignal::ShutdownSignal(int read_fd, int write_fd, std::function<void(int)> on_signal)
    : read_fd_(read_fd), write_fd_(write_fd), on_signal_(std::move(on_signal)) {
  watcher_ = std::thread([this] { watch(); });
}

ShutdownSignal::~ShutdownSignal() {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int s : kSignals) ::sigaction(s, &action, nullptr);
  const unsigned char stop = kStopWatcher;
  [[maybe_unused]] const ssize_t written = ::write(write_fd_, &stop, 1);
  watcher_.join();
  g_write_fd.store(-1);
  ::close(read_fd_);
  ::close(write_fd_);
}

void ShutdownSignal::watch() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = ::read(read_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == kStopWatcher) return;
    on_signal_(byte);
  }
}

}  // namespace star::server
