// The MPI_COMM_WORLD communicator for a test (collective: every rank creates it in the same test).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "star/dist/mpi_communicator.h"

namespace star::testing {

inline std::unique_ptr<MpiCommunicator> world() {
  auto comm = MpiCommunicator::duplicate_world();
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().to_string().c_str());
    std::abort();
  }
  return std::move(*comm);
}

}  // namespace star::testing
