// MpiRuntime: owns MPI's lifetime in a process. Create it first in main() and let it outlive every
// MpiCommunicator; its destructor finalizes MPI if this object initialized it.
#pragma once

#include "star/common/status.h"

namespace star {

class MpiRuntime {
 public:
  // Initializes MPI with MPI_THREAD_SERIALIZED. If MPI is already initialized (a second runtime,
  // or a host program that initialized it), the runtime adopts it and never finalizes it; that
  // fails with FAILED_PRECONDITION when the existing thread level is below SERIALIZED, and so does
  // a call after MPI was finalized (MPI cannot be initialized twice).
  static Result<MpiRuntime> start(int* argc, char*** argv);

  MpiRuntime(MpiRuntime&& other) noexcept;
  MpiRuntime& operator=(MpiRuntime&&) = delete;
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  ~MpiRuntime();

  // True when this object initialized MPI and will finalize it.
  bool owns_mpi() const { return owns_mpi_; }

 private:
  explicit MpiRuntime(bool owns_mpi) : owns_mpi_(owns_mpi) {}
  bool owns_mpi_ = false;
};

}  // namespace star
