#include "star/backend/cuda/cuda_status.h"

#include <cstdlib>
#include <string>

#include "star/backend/cuda/no_device_reason.h"

namespace star::cuda {

static_assert(cudaErrorStubLibrary == kErrorStubLibrary);
static_assert(cudaErrorInsufficientDriver == kErrorInsufficientDriver);
static_assert(cudaErrorNoDevice == kErrorNoDevice);
static_assert(cudaErrorSystemDriverMismatch == kErrorSystemDriverMismatch);
static_assert(cudaErrorCompatNotSupportedOnDevice == kErrorCompatNotSupportedOnDevice);

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

Status device_status() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) {
    if (count > 0) return ok_status();
    return failed_precondition("no CUDA device visible to this process (cudaGetDeviceCount found 0)");
  }
  cudaGetLastError();  // this thread's last error is read by later checks (launch_status)
  const DeviceCountError e{static_cast<int>(error), cudaGetErrorName(error), cudaGetErrorString(error)};
  return failed_precondition("no CUDA device visible to this process: " +
                             no_device_reason(e, find_driver_library(), std::getenv("CUDA_VISIBLE_DEVICES")));
}

}  // namespace star::cuda
