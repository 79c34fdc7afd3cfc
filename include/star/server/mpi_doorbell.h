// MpiDoorbell: lets idle worker ranks sleep between requests. Open MPI's blocking calls poll the
// network without pause, so a worker parked in the step broadcast would burn a core while the
// server is idle. Instead rank 0 rings (a zero-byte message to every other rank) before the first
// step after an idle engine, and an idle worker waits for the ring with MPI_Iprobe and short sleeps.
// Its own communicator (a duplicate of MPI_COMM_WORLD) keeps the rings apart from engine traffic.
#pragma once

#include <chrono>
#include <memory>

#include "star/common/status.h"

namespace star::server {

class MpiDoorbell {
 public:
  // Collective over MPI_COMM_WORLD; needs MPI initialized. Every rank must destroy it, before MPI
  // is finalized.
  static Result<std::unique_ptr<MpiDoorbell>> create();
  ~MpiDoorbell();
  MpiDoorbell(const MpiDoorbell&) = delete;
  MpiDoorbell& operator=(const MpiDoorbell&) = delete;

  // Rank 0: wakes every other rank.
  Status ring();
  // Other ranks: returns once rank 0 rang, checking every `poll`.
  Status wait(std::chrono::microseconds poll = std::chrono::microseconds(500));

 private:
  struct Handle;
  explicit MpiDoorbell(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

}  // namespace star::server
