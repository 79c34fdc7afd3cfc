#include "star/backend/cuda/no_device_reason.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

namespace star::cuda {
namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

std::string runtime_words(const DeviceCountError& error) {
  return "cudaGetDeviceCount: " + error.name + " (" + std::to_string(error.code) + "): " + error.text;
}

std::string driver_named(const DriverLibrary& driver) {
  return driver.path.empty() ? std::string(kDriverLibrary) : driver.path;
}

// A forward-compatibility libcuda ships in a CUDA toolkit's compat/ folder.
bool from_compat_folder(const DriverLibrary& driver) { return driver.path.find("/compat/") != std::string::npos; }

}  // namespace

DriverLibrary find_driver_library() {
  DriverLibrary found;
  // The name the CUDA runtime opens: where the runtime loaded the driver, this is that same copy.
  void* handle = dlopen(kDriverLibrary, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    found.load_error = why != nullptr ? why : "dlopen failed";
    return found;
  }
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    // The file behind the soname link (libcuda.so.580.95.05) names the driver's version.
    char* real = realpath(map->l_name, nullptr);
    found.path = real != nullptr ? real : map->l_name;
    free(real);
  }
  if (found.path.empty()) found.path = kDriverLibrary;
  dlclose(handle);
  return found;
}

std::string no_device_reason(const DeviceCountError& error, const DriverLibrary& driver,
                             const char* visible_devices) {
  const std::string runtime = " [" + runtime_words(error) + "]";
  switch (error.code) {
    case kErrorInsufficientDriver:
      if (driver.path.empty()) {
        return "no NVIDIA driver: " + std::string(kDriverLibrary) + " cannot be loaded (" + driver.load_error +
               "); install the driver, or run with --backend cpu" + runtime;
      }
      return "the NVIDIA driver (" + driver.path +
             ") is older than this build's CUDA runtime needs; update the driver, or on a data-center GPU put "
             "the toolkit's forward-compatibility libcuda (cuda-compat) on the library path" + runtime;
    case kErrorStubLibrary:
      return "the driver library loaded (" + driver_named(driver) +
             ") is the CUDA toolkit's stub, which exists only for linking: take its stubs/ folder off "
             "LD_LIBRARY_PATH so that the driver's own libcuda loads" + runtime;
    case kErrorSystemDriverMismatch:
      if (from_compat_folder(driver)) {
        return "the driver library loaded (" + driver.path +
               ") is a forward-compatibility libcuda that this kernel driver does not support: take that "
               "compat/ folder off LD_LIBRARY_PATH so that the driver's own libcuda loads" + runtime;
      }
      return "the driver library loaded (" + driver_named(driver) +
             ") and the kernel's NVIDIA module are of different versions (compare /proc/driver/nvidia/version): "
             "after a driver update, reboot or reload the nvidia module" + runtime;
    case kErrorCompatNotSupportedOnDevice:
      return "the driver library loaded (" + driver_named(driver) +
             ") is a forward-compatibility libcuda, which this GPU does not support (data-center GPUs only); "
             "take that folder (a CUDA toolkit's compat/) off LD_LIBRARY_PATH" + runtime;
    case kErrorNoDevice:
      if (visible_devices != nullptr) {
        return "the driver shows this process no GPU; CUDA_VISIBLE_DEVICES is '" + std::string(visible_devices) +
               "', which may hide them (unset it, or list GPUs that exist)" + runtime;
      }
      return "the driver (" + driver_named(driver) + ") finds no GPU (does nvidia-smi list one?)" + runtime;
    default:
      return runtime_words(error);
  }
}

}  // namespace star::cuda
