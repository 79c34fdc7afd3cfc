// ShutdownSignal: turns SIGTERM and SIGINT into a call on an ordinary thread. The signal handler
// only writes the signal number to a pipe (async-signal-safe); a watcher thread reads it and runs
// the callback, where any work is allowed.
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "star/common/status.h"

namespace star::server {

class ShutdownSignal {
 public:
  // Installs the handlers; on_signal(signal number) runs on the watcher thread for every signal.
  static Result<std::unique_ptr<ShutdownSignal>> install(std::function<void(int)> on_signal);
  // Restores the default handlers and stops the watcher.
  ~ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

 private:
  ShutdownSignal(int read_fd, int write_fd, std::function<void(int)> on_signal);
  void watch();

  int read_fd_;
  int write_fd_;
  std::function<void(int)> on_signal_;
  std::thread watcher_;
};

}  // namespace star::server
