// Why a process sees no CUDA device, in words a user can act on. cudaGetDeviceCount's own text
// misleads for the commonest causes: with no NVIDIA driver installed at all it says "CUDA driver
// version is insufficient for CUDA runtime version", and a forward-compatibility libcuda (the
// toolkit's compat/ folder) left on LD_LIBRARY_PATH gives errors 803 and 804, whose texts name
// neither the library nor where it came from (803 also follows a driver update without a reboot,
// and the toolkit's stubs/ folder on the path gives 34).
#pragma once

#include <string>

namespace star::cuda {

// The cudaError_t values explained below (cuda_status.cpp checks them against the runtime's enum).
inline constexpr int kErrorStubLibrary = 34;
inline constexpr int kErrorInsufficientDriver = 35;
inline constexpr int kErrorNoDevice = 100;
inline constexpr int kErrorSystemDriverMismatch = 803;
inline constexpr int kErrorCompatNotSupportedOnDevice = 804;

// What cudaGetDeviceCount returned.
struct DeviceCountError {
  int code = 0;      // cudaError_t
  std::string name;  // cudaGetErrorName
  std::string text;  // cudaGetErrorString
};

// The driver library, libcuda.so.1, as this process finds it.
struct DriverLibrary {
  std::string path;        // the file mapped, links resolved (empty when it cannot be loaded)
  std::string load_error;  // dlerror() when it cannot
};

// libcuda.so.1 as the dynamic loader resolves it for this process (LD_LIBRARY_PATH included); after
// a CUDA runtime call it is the library the runtime already loaded.
DriverLibrary find_driver_library();

// The reason, naming the runtime's error, the driver library and CUDA_VISIBLE_DEVICES where they
// are the cause (visible_devices: its value, or null when it is unset).
std::string no_device_reason(const DeviceCountError& error, const DriverLibrary& driver,
                             const char* visible_devices);

}  // namespace star::cuda
