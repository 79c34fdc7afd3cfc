// The MPI GPU tests need one GPU per rank on every host. Collective: every rank calls it, so all
// ranks skip alike and none is left waiting in a later collective.
#pragma once

#include <mpi.h>

#include <string>

#include "star/backend/cuda/cuda_status.h"

namespace star::testing {

// Empty when every rank has a GPU of its own, else why this rank's test skips.
inline std::string missing_gpu_per_rank(int local_rank) {
  const int devices = cuda::device_count();
  const int enough_here = local_rank < devices ? 1 : 0;
  int enough_everywhere = 0;
  MPI_Allreduce(&enough_here, &enough_everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (devices == 0) return cuda::device_status().message();
  if (!enough_everywhere) {
    return "a host runs more ranks than it has GPUs (here: local rank " + std::to_string(local_rank) + ", " +
           std::to_string(devices) + " device(s))";
  }
  return "";
}

}  // namespace star::testing
