// ShutdownSignal: turns SIGTERM, SIGINT and SIGUSR1 into a call on an ordinary thread. The signal
// handler only writes the signal number to a pipe (async-signal-safe); a watcher thread reads it
// and runs the callback, where any work is allowed.
// SIGUSR1 is there for mpirun: Open MPI's mpirun forwards SIGUSR1 to its ranks, while SIGTERM to
// mpirun makes it kill them (SIGCONT, odls_base_sigkill_timeout, SIGTERM, the timeout again,
// SIGKILL) and exit 1, whatever they were doing. So a supervisor stops the job with SIGUSR1 to
// mpirun alone (systemd: KillMode=mixed, KillSignal=SIGUSR1).
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
