// Why no CUDA device is visible: these tests run without a GPU (none derives from CudaTest). The
// driver library is checked against the dynamic loader itself, and on a machine without a driver
// device_status must say so instead of the runtime's "driver version is insufficient".
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/no_device_reason.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

bool driver_loads() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

cuda::DeviceCountError error_of(int code, const char* name, const char* text) { return {code, name, text}; }

TEST(NoDeviceReason, FindsTheDriverLibraryAsTheLoaderDoes) {
  const cuda::DriverLibrary found = cuda::find_driver_library();
  if (driver_loads()) {
    EXPECT_TRUE(std::filesystem::exists(found.path)) << found.path;
    EXPECT_EQ(found.load_error, "");
  } else {
    EXPECT_EQ(found.path, "");
    EXPECT_THAT(found.load_error, HasSubstr("libcuda.so.1"));
  }
}

TEST(NoDeviceReason, DeviceStatusNamesAMissingDriver) {
  if (driver_loads()) GTEST_SKIP() << "libcuda.so.1 loads on this machine";
  const Status s = cuda::device_status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("no CUDA device visible to this process: no NVIDIA driver: libcuda.so.1 "
                                     "cannot be loaded"));
  EXPECT_THAT(s.message(), HasSubstr("cudaErrorInsufficientDriver (35)"));
  // Asked again, the same answer (the runtime reports its failed start on every call).
  EXPECT_EQ(cuda::device_status().message(), s.message());
}

TEST(NoDeviceReason, InsufficientDriverTellsAMissingDriverFromAnOldOne) {
  const auto e = error_of(cuda::kErrorInsufficientDriver, "cudaErrorInsufficientDriver",
                          "CUDA driver version is insufficient for CUDA runtime version");
  const std::string missing = cuda::no_device_reason(e, {"", "libcuda.so.1: cannot open shared object file"}, nullptr);
  EXPECT_THAT(missing, HasSubstr("no NVIDIA driver"));
  EXPECT_THAT(missing, HasSubstr("libcuda.so.1: cannot open shared object file"));
  EXPECT_THAT(missing, HasSubstr("cudaErrorInsufficientDriver (35): CUDA driver version is insufficient"));
  const std::string old = cuda::no_device_reason(e, {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", ""}, nullptr);
  EXPECT_THAT(old, HasSubstr("the NVIDIA driver (/usr/lib/x86_64-linux-gnu/libcuda.so.1) is older"));
  EXPECT_THAT(old, Not(HasSubstr("no NVIDIA driver")));
}

TEST(NoDeviceReason, ForwardCompatibilityErrorsNameTheLibraryAndThePath) {
  const cuda::DriverLibrary compat{"/usr/local/cuda-13.0/compat/libcuda.so.1", ""};
  struct Case {
    cuda::DeviceCountError error;
    const char* says;
  };
  const Case cases[] = {
      {error_of(cuda::kErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch",
                "system has unsupported display driver / cuda driver combination"),
       "(/usr/local/cuda-13.0/compat/libcuda.so.1) is a forward-compatibility libcuda that this kernel driver"},
      {error_of(cuda::kErrorCompatNotSupportedOnDevice, "cudaErrorCompatNotSupportedOnDevice",
                "forward compatibility was attempted on non supported HW"),
       "(/usr/local/cuda-13.0/compat/libcuda.so.1) is a forward-compatibility"},
  };
  for (const Case& c : cases) {
    const std::string reason = cuda::no_device_reason(c.error, compat, nullptr);
    EXPECT_THAT(reason, HasSubstr(c.says));
    EXPECT_THAT(reason, HasSubstr("LD_LIBRARY_PATH"));
    EXPECT_THAT(reason, HasSubstr(c.error.name + " (" + std::to_string(c.error.code) + "): " + c.error.text));
  }
}

TEST(NoDeviceReason, AMismatchWithoutACompatLibraryIsAStaleKernelModule) {
  const std::string reason = cuda::no_device_reason(
      error_of(cuda::kErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch",
               "system has unsupported display driver / cuda driver combination"),
      {"/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", ""}, nullptr);
  EXPECT_THAT(reason, HasSubstr("/proc/driver/nvidia/version"));
  EXPECT_THAT(reason, Not(HasSubstr("LD_LIBRARY_PATH")));
}

TEST(NoDeviceReason, TheToolkitsStubIsNamed) {
  const std::string reason = cuda::no_device_reason(
      error_of(cuda::kErrorStubLibrary, "cudaErrorStubLibrary", "CUDA driver is a stub library"),
      {"/usr/local/cuda/lib64/stubs/libcuda.so", ""}, nullptr);
  EXPECT_THAT(reason, HasSubstr("(/usr/local/cuda/lib64/stubs/libcuda.so) is the CUDA toolkit's stub"));
  EXPECT_THAT(reason, HasSubstr("cudaErrorStubLibrary (34)"));
}

TEST(NoDeviceReason, NoDeviceNamesCudaVisibleDevicesOnlyWhenSet) {
  const auto e = error_of(cuda::kErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected");
  const cuda::DriverLibrary driver{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", ""};
  EXPECT_THAT(cuda::no_device_reason(e, driver, ""), HasSubstr("CUDA_VISIBLE_DEVICES is ''"));
  EXPECT_THAT(cuda::no_device_reason(e, driver, "7"), HasSubstr("CUDA_VISIBLE_DEVICES is '7'"));
  const std::string unset = cuda::no_device_reason(e, driver, nullptr);
  EXPECT_THAT(unset, Not(HasSubstr("CUDA_VISIBLE_DEVICES")));
  EXPECT_THAT(unset, HasSubstr("nvidia-smi"));
}

TEST(NoDeviceReason, OtherErrorsKeepTheRuntimeWords) {
  EXPECT_EQ(cuda::no_device_reason(error_of(999, "cudaErrorUnknown", "unknown error"), {}, "0"),
            "cudaGetDeviceCount: cudaErrorUnknown (999): unknown error");
}

}  // namespace
}  // namespace star
