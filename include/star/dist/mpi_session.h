// MPI for a program's lifetime: MPI initialized and a duplicate of MPI_COMM_WORLD for the engine.
// Members are destroyed in reverse order, so the communicator goes before MPI is finalized.
#pragma once

#include <memory>

#include "star/common/status.h"
#include "star/dist/mpi_communicator.h"
#include "star/dist/mpi_runtime.h"

namespace star {

struct MpiSession {
  MpiRuntime runtime;
  std::unique_ptr<MpiCommunicator> world;

  // MpiRuntime::start, then MpiCommunicator::duplicate_world (collective). argc/argv may be null.
  static Result<MpiSession> start(int* argc, char*** argv);
};

}  // namespace star
