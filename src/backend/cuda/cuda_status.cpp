#include "star/backend/cuda/cuda_status.h"

#include <string>

namespace star::cuda {

Status cuda_status(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return ok_status();
  return internal_error(std::string(what) + ": " + cudaGetErrorName(error) + ": " +
                        cudaGetErrorString(error));
}

Status launch_status(const char* kernel) {
  return cuda_status(cudaGetLastError(), (std::string("launching ") + kernel).c_str());
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error for later calls
    return 0;
  }
  return count;
}

}  // namespace star::cuda
