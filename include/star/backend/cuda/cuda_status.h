// CUDA runtime errors as star::Status, and whether this process sees a GPU at all.
#pragma once

#include <cuda_runtime_api.h>

#include "star/common/status.h"

namespace star::cuda {

// ok for cudaSuccess; otherwise INTERNAL "<what>: <error name>: <error text>".
Status cuda_status(cudaError_t error, const char* what);

// The status of the last kernel launch on this thread (cudaGetLastError), naming the kernel.
// Launches are asynchronous: this catches bad launch configurations, not faults inside a kernel.
Status launch_status(const char* kernel);

// CUDA devices visible to this process; 0 when there is none or no driver (cudaGetDeviceCount
// reports an error then).
int device_count();

// ok when this process sees a CUDA device; otherwise FAILED_PRECONDITION "no CUDA device visible
// to this process: <why>" (no_device_reason.h).
Status device_status();

}  // namespace star::cuda
